package web

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"mime/multipart"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/a6afc2ce/hermes-hub/admin"
	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/hub"
)

// Identity is the access-control identity of every web and API caller.
const Identity = "web"

// route is one endpoint this package serves itself.
type route struct {
	method string
	h      http.HandlerFunc
	public bool // served without authentication
}

// apiHandler serves /api/: the Origin check on state-changing requests,
// authentication, then this package's endpoints or the admin API's.
func (s *Server) apiHandler() http.Handler {
	routes := map[string][]route{
		"/api/login":     {{method: http.MethodPost, h: s.login, public: true}},
		"/api/logout":    {{method: http.MethodPost, h: s.logout, public: true}},
		"/api/execute":   {{method: http.MethodPost, h: s.execute}},
		"/api/messages":  {{method: http.MethodPost, h: s.message}},
		"/api/events":    {{method: http.MethodGet, h: s.stream}},
		"/api/history":   {{method: http.MethodGet, h: s.history}},
		"/api/verbs":     {{method: http.MethodGet, h: s.verbs}},
		"/api/status":    {{method: http.MethodGet, h: s.status}},
		"/api/cancel":    {{method: http.MethodPost, h: s.cancel}},
		"/api/confirm":   {{method: http.MethodPost, h: s.confirm}},
		"/api/workspace": {{method: http.MethodGet, h: s.workspace}},
		filesPath:        {{method: http.MethodGet, h: s.download}},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		method := s.auth.method(r)
		rs, known := routes[r.URL.Path]
		if strings.HasPrefix(r.URL.Path, filesPath) {
			rs, known = routes[filesPath], true
		}
		public := false
		var h http.HandlerFunc
		for _, rt := range rs {
			if rt.method == r.Method {
				h, public = rt.h, rt.public
			}
		}
		if method == authNone && !public && attempted(r) {
			// Wrong credentials on an authenticated endpoint. Login counts
			// its own; the right token or a valid cookie is never refused.
			if client, secs := s.WrongCredentials(r); secs > 0 {
				tooMany(w, client, secs)
				return
			}
		}
		if stateChanging(r.Method) {
			ok, present := s.originOK(r)
			switch {
			case present && !ok:
				admin.WriteError(w, http.StatusForbidden, "cross-origin request refused: Origin %q is not this hub's origin (add it to web.allowed_origins to allow it)", r.Header.Get("Origin"))
				return
			case !present && method == authCookie:
				admin.WriteError(w, http.StatusForbidden, "a request authenticated by the login cookie must carry an Origin header; API clients use Authorization: Bearer <token>")
				return
			}
		}
		if method == authNone && !public {
			w.Header().Set("WWW-Authenticate", `Bearer realm="hub"`)
			admin.WriteError(w, http.StatusUnauthorized, "authentication required: send Authorization: Bearer <token>, or log in with POST /api/login")
			return
		}
		switch {
		case h != nil:
			h(w, r)
		case known:
			allow := make([]string, 0, len(rs))
			for _, rt := range rs {
				allow = append(allow, rt.method)
			}
			w.Header().Set("Allow", strings.Join(allow, ", "))
			admin.WriteError(w, http.StatusMethodNotAllowed, "%s %s is not accepted (accepted: %s)", r.Method, r.URL.Path, strings.Join(allow, ", "))
		default:
			s.adminHandler().ServeHTTP(w, r)
		}
	})
}

// adminHandler is the admin API's handler (Options.Admin), built on first
// use; unknown paths, and every path without an admin API, get a JSON 404.
func (s *Server) adminHandler() http.Handler {
	s.adminOnce.Do(func() {
		var h http.Handler = http.NewServeMux()
		if s.adminAPI != nil {
			a := *s.adminAPI // the caller's stays as it is
			if a.MaxBody <= 0 || a.MaxBody > s.maxBody {
				a.MaxBody = s.maxBody
			}
			base := a.Status
			a.Status = func() map[string]any {
				m := map[string]any{}
				if base != nil {
					m = base()
				}
				m["web"] = s.events.stats()
				m["connections"] = s.connStats()
				return m
			}
			h = a.Handler()
		}
		mux, _ := h.(*http.ServeMux)
		s.admin = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if mux != nil {
				if _, pattern := mux.Handler(r); pattern == "" {
					admin.WriteError(w, http.StatusNotFound, "no API endpoint %s %s (see GET /api/verbs, POST /api/execute, POST /api/messages, GET /api/events, /api/targets, /api/channels, /api/outbox, /api/mirror, /api/status)", r.Method, r.URL.Path)
					return
				}
			}
			h.ServeHTTP(w, r)
		})
	})
	return s.admin
}

// readBody reads the (already capped) request body; on failure it writes
// the error response and returns false.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			admin.WriteError(w, http.StatusRequestEntityTooLarge, "request body is over the limit of %d bytes (web.max_body_bytes)", mbe.Limit)
			return nil, false
		}
		admin.WriteError(w, http.StatusBadRequest, "read request body: %v", err)
		return nil, false
	}
	return body, true
}

// decodeJSON decodes one JSON object strictly into v.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	body, ok := readBody(w, r)
	if !ok {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		admin.WriteError(w, http.StatusBadRequest, "request body is not the expected JSON object: %v", err)
		return false
	}
	if dec.More() {
		admin.WriteError(w, http.StatusBadRequest, "request body has data after the JSON object")
		return false
	}
	return true
}

// loginRequest is POST /api/login.
type loginRequest struct {
	Token string `json:"token"`
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	var req loginRequest
	if !decodeJSON(w, r, &req) {
		return
	}
	if !s.auth.checkToken(req.Token) {
		if client, secs := s.WrongCredentials(r); secs > 0 {
			tooMany(w, client, secs)
			return
		}
		admin.WriteError(w, http.StatusUnauthorized, "wrong token: use the token of web.token (or web.token_file), or the one `hub serve` printed when it generated one")
		return
	}
	val, exp, err := s.auth.issue()
	if err != nil {
		admin.WriteError(w, http.StatusInternalServerError, "issue login cookie: %v", err)
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: val, Path: "/", Expires: exp, MaxAge: int(SessionTTL / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || s.secureCookie,
	})
	admin.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "expires": exp.UTC()})
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	var err error
	if c, cerr := r.Cookie(CookieName); cerr == nil {
		err = s.auth.revoke(c.Value)
	}
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || s.secureCookie,
	})
	if err != nil {
		s.log.Error("logout: the session could not be revoked", "err", err)
		admin.WriteError(w, http.StatusInternalServerError, "logout: the session could not be revoked, so the cookie stays valid elsewhere; retry")
		return
	}
	admin.WriteJSON(w, http.StatusOK, map[string]any{"ok": true})
}

// envelopeTypes are the accepted Content-Types of POST /api/execute.
var envelopeTypes = map[string]bool{
	"application/json": true, "application/yaml": true, "application/x-yaml": true,
	"text/yaml": true, "text/x-yaml": true, "text/plain": true,
}

// execute runs one envelope (YAML or JSON) and answers with the result
// JSON: 200 whether or not the verb succeeded; 4xx only when the request
// itself is wrong.
func (s *Server) execute(w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || !envelopeTypes[mt] {
			admin.WriteError(w, http.StatusUnsupportedMediaType, "Content-Type %q is not accepted (accepted: application/json, application/yaml, text/plain)", ct)
			return
		}
	}
	session := r.URL.Query().Get("session")
	if err := validSession(session); err != nil {
		admin.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	workspace := r.URL.Query().Get("workspace")
	if workspace != "" {
		if err := config.ValidWorkspaceName(workspace); err != nil {
			admin.WriteError(w, http.StatusBadRequest, "workspace: %v", err)
			return
		}
	}
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	out, err := s.hub.Execute(r.Context(), hub.APIRequest{Identity: Identity, Session: session, Workspace: workspace, Input: body})
	if err != nil {
		// The full error (with the mirror file's path) goes to the log; the
		// caller learns the cause without host paths.
		s.log.Error("api call refused", "err", err)
		cause := "unknown cause"
		if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
			cause = pe.Err.Error()
		}
		admin.WriteError(w, http.StatusServiceUnavailable, "mirror unavailable: %v (%s); free space for the mirror (flows/ in the state directory) and retry", hub.ErrNotMirrored, cause)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(out.JSON(), '\n'))
}

func validSession(s string) error {
	if len(s) > 128 {
		return fmt.Errorf("session is %d bytes long (at most 128)", len(s))
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e || c == '/' || c == '\\' {
			return fmt.Errorf("session %q has %q at byte %d (accepted: printable ASCII without spaces or slashes)", s, c, i)
		}
	}
	return nil
}

// MessageRequest is POST /api/messages.
type MessageRequest struct {
	Text string `json:"text"`
	// ClientTurnID makes a resubmission idempotent: the turn id is
	// web.<client_turn_id>. 1 to 64 characters A-Z a-z 0-9 _ -; generated
	// when empty.
	ClientTurnID string `json:"client_turn_id,omitempty"`
}

// MessageResponse is the 202 answer of POST /api/messages; the reply
// itself arrives on GET /api/events.
type MessageResponse struct {
	TurnID string   `json:"turn_id"`
	Status string   `json:"status"`
	Outbox []string `json:"outbox"`
}

// validClientTurnID checks 1–64 characters of [A-Za-z0-9_-].
func validClientTurnID(id string) error {
	if id == "" || len(id) > 64 {
		return fmt.Errorf("client_turn_id %q must have 1 to 64 characters (accepted: A-Z a-z 0-9 _ -)", id)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("client_turn_id %q has %q at byte %d (accepted: A-Z a-z 0-9 _ -)", id, c, i)
		}
	}
	return nil
}

// message runs chat text from the panel through the hub, like a Telegram or
// Discord message. It answers once the reply is durably enqueued.
func (s *Server) message(w http.ResponseWriter, r *http.Request) {
	var req MessageRequest
	var file *multipart.Part
	if isMultipart(r) {
		var err error
		if req, file, err = multipartMessage(r); err != nil {
			admin.WriteError(w, http.StatusBadRequest, "%v", err)
			return
		}
	} else if !decodeJSON(w, r, &req) {
		return
	}
	if strings.TrimSpace(req.Text) == "" && file == nil {
		admin.WriteError(w, http.StatusBadRequest, "text is empty: send a command such as /fs.listDir ., or a file")
		return
	}
	if req.ClientTurnID == "" {
		var b [12]byte
		_, _ = rand.Read(b[:])
		req.ClientTurnID = hex.EncodeToString(b[:])
	} else if err := validClientTurnID(req.ClientTurnID); err != nil {
		admin.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	now := s.clk.Now().UTC()
	in := &chat.Inbound{
		TurnID: "web." + req.ClientTurnID, Platform: chat.Web, ChatID: "web", ChatType: chat.ChatWeb,
		MessageID: req.ClientTurnID, UserID: "web", UserName: "web", Text: req.Text, Time: now,
	}
	if file != nil {
		// The turn's fs.upload reads the part as it arrives (Open).
		in.Upload = &chat.Upload{Name: file.FileName(), MIME: file.Header.Get("Content-Type"), Ref: in.TurnID}
		s.uploads.put(in.TurnID, &filePart{part: file, w: w})
		defer s.uploads.take(in.TurnID)
	}
	// A client that goes away must not cut a turn in half: the turn runs to
	// its end (bounded by the verb timeout) and its reply is enqueued.
	res, err := s.hub.Handle(context.WithoutCancel(r.Context()), in)
	if err != nil {
		s.log.Error("web turn failed", "turn", in.TurnID, "err", err)
		admin.WriteError(w, http.StatusInternalServerError, "%v", err) // it names the turn
		return
	}
	out := MessageResponse{TurnID: res.TurnID, Status: string(res.Status), Outbox: res.Outbox}
	if out.Outbox == nil {
		out.Outbox = []string{}
	}
	admin.WriteJSON(w, http.StatusAccepted, out)
}

// HistoryResponse is GET /api/history: the ring, oldest first.
type HistoryResponse struct {
	Events []Event `json:"events"`
	LastID string  `json:"last_event_id,omitempty"`
}

func (s *Server) history(w http.ResponseWriter, r *http.Request) {
	evs := s.events.snapshot()
	res := HistoryResponse{Events: evs}
	if len(evs) > 0 {
		res.LastID = evs[len(evs)-1].ID
	}
	admin.WriteJSON(w, http.StatusOK, res)
}

// VerbView is one verb of GET /api/verbs.
type VerbView struct {
	Name      string              `json:"name"`
	Summary   string              `json:"summary"`
	ReadOnly  bool                `json:"readOnly"`
	Usage     string              `json:"usage"`
	Arguments executor.TypeSchema `json:"arguments"`
	Result    executor.TypeSchema `json:"result"`
	IDL       string              `json:"idl"`
}

// VerbsResponse is GET /api/verbs: the verbs the web identity may run, and
// the built-in commands.
type VerbsResponse struct {
	Verbs    []VerbView `json:"verbs"`
	Builtins []string   `json:"builtins"`
}

func (s *Server) verbs(w http.ResponseWriter, r *http.Request) {
	allowed := map[string]bool{}
	for _, v := range s.hub.VerbsFor([]string{Identity}) {
		allowed[v.Name] = true
	}
	res := VerbsResponse{Verbs: []VerbView{}, Builtins: append([]string(nil), executor.Builtins...)}
	for _, sc := range s.hub.Registry().Schemas() {
		if !allowed[sc.Name] {
			continue
		}
		usage, _ := s.hub.Usage(sc.Name)
		if sc.Arguments.Fields == nil {
			sc.Arguments.Fields = []executor.Field{}
		}
		res.Verbs = append(res.Verbs, VerbView{Name: sc.Name, Summary: sc.Summary, ReadOnly: sc.ReadOnly, Usage: usage, Arguments: sc.Arguments, Result: sc.Result, IDL: sc.IDL})
	}
	sort.Slice(res.Verbs, func(i, j int) bool { return res.Verbs[i].Name < res.Verbs[j].Name })
	admin.WriteJSON(w, http.StatusOK, res)
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	s.adminHandler().ServeHTTP(w, r)
}
