package discordtest

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/a6afc2ce/hermes-hub/internal/loopback"
)

// File is a file a person attached, as the fake's CDN serves it.
type File struct {
	Data []byte
	// Declared is the size the attachment announces; 0 announces
	// len(Data). A file bigger than declared is one fault.
	Declared int64
	// Stall serves the first half of the bytes, then nothing until the
	// caller gives up or the server closes: a download that stalls.
	Stall bool
	// Redirect answers with a redirect to this URL instead of the bytes.
	Redirect string
}

func (f *File) declared() int64 {
	if f.Declared > 0 {
		return f.Declared
	}
	return int64(len(f.Data))
}

// cdn is the fake's CDN: a loopback server of its own, as Discord's CDN
// is another host than its API.
type cdn struct {
	net       *loopback.Server
	files     map[string]*File // by path
	downloads int
}

// CDNBase is the scheme and host of the fake's CDN (discord.cdn_base).
func (s *Server) CDNBase() string { return "http://" + s.cdn.net.Addr() }

// CDNDownloads counts the attachment downloads the CDN served or began.
func (s *Server) CDNDownloads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cdn.downloads
}

// Attachment adds f to the CDN as an attachment named name and returns
// its attachment object, as messages and resolved interaction data hold
// it.
func (s *Server) Attachment(name, mime string, f File) map[string]any {
	s.mu.Lock()
	id := s.newID()
	p := fmt.Sprintf("/attachments/%s/%s/%s", s.ChannelID, id, name)
	cp := f
	s.cdn.files[p] = &cp
	s.mu.Unlock()
	return map[string]any{
		"id": id, "filename": name, "content_type": mime, "size": f.declared(),
		"url":       s.CDNBase() + p + "?ex=6650c0de&is=664f6f5e&hm=0123abcd",
		"proxy_url": s.CDNBase() + "/media" + p,
	}
}

// Attach is a slash command's attachment option naming the attachment a
// (Attachment), which the interaction's resolved data must hold
// (Interaction.Attachments).
func Attach(name string, a map[string]any) Option {
	return Option{Name: name, Type: 11, Value: a["id"]}
}

// serveCDN serves the CDN's files: whole, or stalled halfway.
func (s *Server) serveCDN(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	f, ok := s.cdn.files[r.URL.Path]
	if ok {
		s.cdn.downloads++
	}
	s.bump()
	s.mu.Unlock()
	if !ok || r.Method != http.MethodGet {
		http.Error(w, "Not Found", http.StatusNotFound)
		return
	}
	if f.Redirect != "" {
		http.Redirect(w, r, f.Redirect, http.StatusFound)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	if !f.Stall {
		w.Header().Set("Content-Length", strconv.Itoa(len(f.Data)))
		_, _ = w.Write(f.Data)
		return
	}
	_, _ = w.Write(f.Data[:len(f.Data)/2])
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
	s.cdn.net.Hold(r.Context(), -1)
}

// attachmentsOf is the attachment objects of a message payload.
func attachmentsOf(list []map[string]any) []any {
	out := make([]any, 0, len(list))
	for _, a := range list {
		out = append(out, a)
	}
	return out
}

// resolved is an interaction's resolved data holding its attachments.
func resolved(list []map[string]any) map[string]any {
	byID := map[string]any{}
	for _, a := range list {
		byID[strings.TrimSpace(fmt.Sprint(a["id"]))] = a
	}
	return map[string]any{"attachments": byID}
}
