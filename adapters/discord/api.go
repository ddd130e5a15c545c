package discord

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/a6afc2ce/hermes-hub/outbox"
	"github.com/bwmarrin/discordgo"
)

// Discord's JSON error codes the adapter acts on.
const (
	codeUnknownMessage      = 10008
	codeUnknownWebhook      = 10015
	codeUnknownInteraction  = 10062
	codeAlreadyAcknowledged = 40060
	codeInvalidWebhookToken = 50027
)

// defaultRetryAfter is used when a 429 names no delay.
const defaultRetryAfter = time.Second

// apiError is a Discord answer other than success or 429. Its text names
// the request with every token redacted.
type apiError struct {
	Method  string
	Path    string
	Status  int
	Code    int
	Message string
}

func (e *apiError) Error() string {
	s := fmt.Sprintf("discord %s %s: HTTP %d", e.Method, e.Path, e.Status)
	if e.Code != 0 || e.Message != "" {
		s += fmt.Sprintf(": %s (code %d)", e.Message, e.Code)
	}
	return s
}

// rateLimited is a 429, or a bucket discordgo knows to be exhausted: the
// request was not (or not successfully) made and may be repeated after After.
type rateLimited struct {
	Method string
	Path   string
	After  time.Duration
}

func (e *rateLimited) Error() string {
	return fmt.Sprintf("discord %s %s: rate limited for %s", e.Method, e.Path, e.After)
}

// requestError is a failure without an answer from Discord: a network error,
// a timeout, an unreadable answer. Its text has every token redacted.
type requestError struct{ msg string }

func (e *requestError) Error() string { return e.msg }

// request is one REST call through the session.
type request struct {
	Method string
	// Path is below the API base: "/channels/1/messages".
	Path string
	// Query is appended to the URL, not to the rate-limit bucket: "wait=true".
	Query string
	Body  any
	File  *upload
	// Secret is redacted from every error (an interaction token in Path).
	Secret string
}

// call makes one request through discordgo's session with its 429 sleep
// and 502 retries turned off; a bucket discordgo would sleep on returns
// rateLimited at once instead. The answer is the response body.
func (a *Adapter) call(ctx context.Context, r request) ([]byte, error) {
	path := r.Path
	if r.Secret != "" {
		path = strings.ReplaceAll(path, r.Secret, "[token]")
	}
	url := a.apiBase + r.Path
	bucket := url
	if r.Query != "" {
		url += "?" + r.Query
	}
	if w := a.bucketWait(bucket); w > 0 {
		return nil, &rateLimited{Method: r.Method, Path: path, After: w}
	}
	var (
		body        []byte
		contentType = "application/json"
		err         error
	)
	switch {
	case r.File != nil:
		contentType, body, err = discordgo.MultipartBodyWithJSON(r.Body, []*discordgo.File{{
			Name: r.File.Name, ContentType: r.File.MIME, Reader: bytes.NewReader(r.File.Data),
		}})
	case r.Body != nil:
		body, err = json.Marshal(r.Body)
	}
	if err != nil {
		return nil, fmt.Errorf("discord %s %s: encode request: %w", r.Method, path, err)
	}
	resp, err := a.session.RequestRaw(r.Method, url, contentType, body, bucket, 0,
		discordgo.WithContext(ctx), discordgo.WithRetryOnRatelimit(false), discordgo.WithRestRetries(0))
	if err == nil {
		return resp, nil
	}
	var rl *discordgo.RateLimitError
	var re *discordgo.RESTError
	switch {
	case errors.As(err, &rl):
		after := defaultRetryAfter
		if rl.RateLimit != nil && rl.TooManyRequests != nil && rl.RetryAfter > 0 {
			after = rl.RetryAfter
		}
		return nil, &rateLimited{Method: r.Method, Path: path, After: after}
	case errors.As(err, &re) && re.Response != nil:
		e := &apiError{Method: r.Method, Path: path, Status: re.Response.StatusCode}
		if re.Message != nil {
			e.Code, e.Message = re.Message.Code, re.Message.Message
		}
		if e.Message == "" {
			e.Message = http.StatusText(e.Status)
		}
		return nil, e
	}
	msg := err.Error()
	if r.Secret != "" {
		msg = strings.ReplaceAll(msg, r.Secret, "[token]")
	}
	if a.secret != "" {
		msg = strings.ReplaceAll(msg, a.secret, "[token]")
	}
	return nil, &requestError{msg: fmt.Sprintf("discord %s %s: %s", r.Method, path, msg)}
}

// bucketWait is how long discordgo's rate limiter would sleep before a
// request on bucket: the outbox waits instead, so no send blocks in the
// library.
func (a *Adapter) bucketWait(bucket string) time.Duration {
	rl := a.session.Ratelimiter
	b := rl.GetBucket(bucket)
	b.Lock()
	defer b.Unlock()
	return rl.GetWaitTime(b, 1)
}

// classify maps a call's error to the outbox's classes: 429 waits exactly
// retry_after, 5xx, 401, 408 and failures without an answer are transient,
// any other 4xx (unknown channel, missing access, bad request) is permanent.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var rl *rateLimited
	var ae *apiError
	switch {
	case errors.As(err, &rl):
		return outbox.RetryAfter(rl.After, err)
	case errors.As(err, &ae):
		switch {
		case ae.Status >= 500, ae.Status == http.StatusUnauthorized, ae.Status == http.StatusRequestTimeout,
			ae.Status == http.StatusConflict, ae.Status == http.StatusTooEarly:
			return outbox.Transient(err)
		case ae.Status >= 400:
			return outbox.Permanent(err)
		}
	}
	return outbox.Transient(err)
}

// apiCode returns Discord's JSON error code and HTTP status of err, if it is
// an answer from Discord.
func apiCode(err error) (status, code int, ok bool) {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.Status, ae.Code, true
	}
	return 0, 0, false
}

// messageID reads the id of the message object Discord answered with.
func messageID(body []byte) string {
	var m struct {
		ID string `json:"id"`
	}
	if len(body) == 0 || json.Unmarshal(body, &m) != nil {
		return ""
	}
	return m.ID
}
