package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

// APIError is a Bot API call that Telegram (or whatever answered at the API
// endpoint) refused. Code is the Bot API error_code, or the HTTP status when
// the answer was not a Bot API answer at all.
type APIError struct {
	Method      string
	Code        int
	Description string
	// RetryAfter is parameters.retry_after of a 429; MigrateTo is
	// parameters.migrate_to_chat_id of a group that became a supergroup.
	RetryAfter time.Duration
	MigrateTo  int64
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("telegram %s: %d %s", e.Method, e.Code, e.Description)
	if e.RetryAfter > 0 {
		s += fmt.Sprintf(" (retry after %s)", e.RetryAfter)
	}
	if e.MigrateTo != 0 {
		s += fmt.Sprintf(" (migrated to chat %d)", e.MigrateTo)
	}
	return s
}

// cantParse reports Telegram's refusal of the HTML markup of a message.
func (e *APIError) cantParse() bool {
	return e.Code == http.StatusBadRequest && strings.Contains(strings.ToLower(e.Description), "can't parse entities")
}

// botAPI calls Bot API methods through tgbotapi with a context per call and
// errors that never contain the token.
type botAPI struct {
	token    string
	endpoint string // tgbotapi's format: <base>/bot%s/%s
	client   *http.Client
	// files is client without its overall timeout, for the calls that
	// move files, which their context bounds (the outbox's send timeout,
	// uploads.timeout).
	files *http.Client
}

// newBotAPI checks the endpoint (http or https, with a host) and returns the
// client. Nothing is sent.
func newBotAPI(token, endpoint string, client *http.Client) (*botAPI, error) {
	if token == "" {
		return nil, errors.New("telegram: the bot token is empty (set telegram.token)")
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("telegram: api_endpoint %q is not an http:// or https:// address with a host", endpoint)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("telegram: api_endpoint %q must not have a query or fragment", endpoint)
	}
	base := strings.TrimRight(endpoint, "/")
	files := *client
	files.Timeout = 0
	return &botAPI{
		token:    token,
		endpoint: strings.ReplaceAll(base, "%", "%%") + "/bot%s/%s",
		client:   client,
		files:    &files,
	}, nil
}

// ctxDoer binds one call to its context (tgbotapi builds requests without
// one) and remembers the HTTP status of the answer.
type ctxDoer struct {
	ctx    context.Context
	c      *http.Client
	status int
}

func (d *ctxDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.c.Do(req.WithContext(d.ctx))
	if resp != nil {
		d.status = resp.StatusCode
	}
	return resp, err
}

// bot returns a tgbotapi client for one call. It is built without getMe
// (tgbotapi's constructors call it), so building it never touches the
// network.
func (a *botAPI) bot(d *ctxDoer) *tgbotapi.BotAPI {
	b := &tgbotapi.BotAPI{Token: a.token, Client: d, Buffer: 100}
	b.SetAPIEndpoint(a.endpoint)
	return b
}

// call sends one form-encoded Bot API request and returns its result.
func (a *botAPI) call(ctx context.Context, method string, params tgbotapi.Params) (json.RawMessage, error) {
	d := &ctxDoer{ctx: ctx, c: a.client}
	resp, err := a.bot(d).MakeRequest(method, params)
	return a.result(method, d, resp, err)
}

// upload sends one multipart Bot API request with a file in field.
func (a *botAPI) upload(ctx context.Context, method string, params tgbotapi.Params, field string, file tgbotapi.RequestFileData) (json.RawMessage, error) {
	d := &ctxDoer{ctx: ctx, c: a.files}
	resp, err := a.bot(d).UploadFiles(method, params, []tgbotapi.RequestFile{{Name: field, Data: file}})
	return a.result(method, d, resp, err)
}

// result turns tgbotapi's answer into a result or a scrubbed, typed error.
func (a *botAPI) result(method string, d *ctxDoer, resp *tgbotapi.APIResponse, err error) (json.RawMessage, error) {
	if err == nil && resp != nil && resp.Ok {
		return resp.Result, nil
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		// The request never got an answer; the URL (which holds the token)
		// is dropped and only the cause is kept.
		return nil, &callError{method: method, err: ue.Err, token: a.token}
	}
	if d.status == 0 && err != nil {
		return nil, &callError{method: method, err: err, token: a.token}
	}
	e := &APIError{Method: method, Code: d.status}
	if resp != nil && !resp.Ok && (resp.ErrorCode != 0 || resp.Description != "") {
		if resp.ErrorCode != 0 {
			e.Code = resp.ErrorCode
		}
		e.Description = resp.Description
		if p := resp.Parameters; p != nil {
			e.RetryAfter = time.Duration(p.RetryAfter) * time.Second
			e.MigrateTo = p.MigrateToChatID
		}
	} else {
		// Not a Bot API answer: a proxy's error page, an emulator's own
		// error shape, a body cut short.
		e.Description = "unexpected answer"
		if t := http.StatusText(d.status); t != "" {
			e.Description += " (" + t + ")"
		}
	}
	e.Description = redact(e.Description, a.token)
	return nil, e
}

// callError is a call that got no Bot API answer (connection refused, a
// timeout, a cancelled context). Its message never contains the token.
type callError struct {
	method string
	err    error
	token  string
}

func (e *callError) Error() string {
	return "telegram " + e.method + ": " + redact(e.err.Error(), e.token)
}

func (e *callError) Unwrap() error { return e.err }

// redact removes the token from s, and its secret part on its own too (the
// bot id before the ':' is public: getMe tells it to anyone).
func redact(s, token string) string {
	if token == "" {
		return s
	}
	s = strings.ReplaceAll(s, token, "[token]")
	if _, secret, ok := strings.Cut(token, ":"); ok && len(secret) >= 8 {
		s = strings.ReplaceAll(s, secret, "[token]")
	}
	return s
}

// botUser is getMe's answer.
type botUser struct {
	ID       int64  `json:"id"`
	IsBot    bool   `json:"is_bot"`
	Username string `json:"username"`
	Name     string `json:"first_name"`
}

func (a *botAPI) getMe(ctx context.Context) (botUser, error) {
	raw, err := a.call(ctx, "getMe", nil)
	if err != nil {
		return botUser{}, err
	}
	var u botUser
	if err := json.Unmarshal(raw, &u); err != nil {
		return botUser{}, fmt.Errorf("telegram getMe: unreadable result: %w", err)
	}
	return u, nil
}

// allowedUpdates is what the hub asks Telegram for.
const allowedUpdates = `["message","edited_message","callback_query"]`

func (a *botAPI) getUpdates(ctx context.Context, offset int64, timeout time.Duration) ([]rawUpdate, error) {
	p := tgbotapi.Params{
		"timeout":         strconv.Itoa(int(timeout / time.Second)),
		"allowed_updates": allowedUpdates,
	}
	if offset != 0 {
		p["offset"] = strconv.FormatInt(offset, 10)
	}
	raw, err := a.call(ctx, "getUpdates", p)
	if err != nil {
		return nil, err
	}
	// Each update is decoded on its own so that one the hub cannot read does
	// not hide the others (it is skipped, and the offset moves past it).
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("telegram getUpdates: unreadable result: %w", err)
	}
	out := make([]rawUpdate, 0, len(list))
	for _, r := range list {
		u, err := decodeUpdate(r)
		if err != nil && u.ID == 0 {
			continue // not even an update id: nothing to acknowledge either
		}
		out = append(out, u)
	}
	return out, nil
}

// messageID reads message_id from a sendMessage or sendDocument result.
func messageID(raw json.RawMessage) string {
	var m struct {
		MessageID int64 `json:"message_id"`
	}
	if json.Unmarshal(raw, &m) != nil || m.MessageID == 0 {
		return ""
	}
	return strconv.FormatInt(m.MessageID, 10)
}
