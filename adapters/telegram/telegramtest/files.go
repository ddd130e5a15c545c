package telegramtest

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// File is a file a person sent the bot, as the fake serves it to getFile
// and to the file download URL.
type File struct {
	Data []byte
	// Declared is the file_size getFile (and the message) announces; 0
	// announces len(Data). A file bigger than declared is one fault.
	Declared int64
	// Stall serves the first half of the bytes, then nothing until the
	// caller gives up or the server closes: a download that stalls.
	Stall bool
}

// maxDownload is Telegram's limit on files bots may download.
const maxDownload = 20 << 20

// AddFile makes f a file of the fake's storage and returns its file_id.
func (s *Server) AddFile(f File) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.files == nil {
		s.files = map[string]*File{}
	}
	id := fmt.Sprintf("BQACAgIAAx0file%04d", len(s.files)+1)
	cp := f
	s.files[id] = &cp
	return id
}

// declared is the size announced of f.
func (f *File) declared() int64 {
	if f.Declared > 0 {
		return f.Declared
	}
	return int64(len(f.Data))
}

// Document is the message object of a document f, added to the fake's
// storage, named name: the "document" of a message.
func (s *Server) Document(name, mime string, f File) map[string]any {
	id := s.AddFile(f)
	return map[string]any{"file_id": id, "file_unique_id": "u" + id, "file_name": name, "mime_type": mime, "file_size": f.declared()}
}

// Downloads counts the file downloads started.
func (s *Server) Downloads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.downloads
}

// getFile answers getFile: the file's path in the storage, as Telegram
// does, or 400 for an unknown file_id or one over the 20 MB bots may
// download.
func (s *Server) getFile(w http.ResponseWriter, params url.Values) {
	id := params.Get("file_id")
	s.mu.Lock()
	f, ok := s.files[id]
	s.mu.Unlock()
	switch {
	case !ok:
		writeAPI(w, 400, map[string]any{"ok": false, "error_code": 400, "description": "Bad Request: invalid file_id"})
	case f.declared() > maxDownload:
		writeAPI(w, 400, map[string]any{"ok": false, "error_code": 400, "description": "Bad Request: file is too big"})
	default:
		writeOK(w, map[string]any{"file_id": id, "file_unique_id": "u" + id, "file_size": f.declared(), "file_path": "documents/" + id + ".bin"})
	}
}

// download serves /file/bot<token>/documents/<file_id>.bin.
func (s *Server) download(w http.ResponseWriter, r *http.Request, rest string) {
	id := strings.TrimSuffix(strings.TrimPrefix(rest, "documents/"), ".bin")
	s.mu.Lock()
	f, ok := s.files[id]
	if ok {
		s.downloads++
	}
	s.mu.Unlock()
	if !ok {
		http.Error(w, "Not Found", http.StatusNotFound)
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
	s.net.Hold(r.Context(), -1)
}
