package telegram

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/a6afc2ce/hermes-hub/chat"
)

// Files through the chat (docs/uploads.md): a message may carry one file (a
// document, a photo, an audio, a video, a voice note, an animation), which
// the hub saves with fs.upload; the adapter fetches it with getFile and
// the Bot API's file download URL, which lets bots download files of up to
// 20 MB (chat.TelegramDownloadLimit).

// rawFile is the part of a Bot API file object (Document, PhotoSize,
// Audio, …) the hub reads.
type rawFile struct {
	FileID   string `json:"file_id"`
	FileName string `json:"file_name"`
	MIMEType string `json:"mime_type"`
	FileSize int64  `json:"file_size"`
}

// upload is the file the message carries, or nil: the largest size of a
// photo, named after the message (Telegram gives photos no name).
func (m *rawMessage) upload() *chat.Upload {
	var f *rawFile
	name := ""
	switch {
	case m.Document != nil:
		f = m.Document
	case len(m.Photo) > 0:
		f = &m.Photo[len(m.Photo)-1]
		name = fmt.Sprintf("photo-%d.jpg", m.MessageID)
	case m.Video != nil:
		f, name = m.Video, fmt.Sprintf("video-%d.mp4", m.MessageID)
	case m.Audio != nil:
		f, name = m.Audio, fmt.Sprintf("audio-%d.mp3", m.MessageID)
	case m.Animation != nil:
		f, name = m.Animation, fmt.Sprintf("animation-%d.mp4", m.MessageID)
	case m.Voice != nil:
		f, name = m.Voice, fmt.Sprintf("voice-%d.ogg", m.MessageID)
	case m.VideoNote != nil:
		f, name = m.VideoNote, fmt.Sprintf("video-note-%d.mp4", m.MessageID)
	}
	if f == nil || f.FileID == "" {
		return nil
	}
	if f.FileName != "" {
		name = f.FileName
	}
	if name == "" {
		name = fmt.Sprintf("file-%d", m.MessageID)
	}
	return &chat.Upload{Name: name, Size: f.FileSize, MIME: f.MIMEType, Ref: f.FileID}
}

// Open fetches a file a person sent (hub.FileSource): getFile for its
// path, then the file itself, streamed. A file over Telegram's download
// limit for bots is refused before anything is fetched; the caller bounds
// the download with ctx and reads at most the size announced.
func (a *Adapter) Open(ctx context.Context, u *chat.Upload) (io.ReadCloser, error) {
	if u.Size > chat.TelegramDownloadLimit {
		return nil, tooBig(u.Size)
	}
	raw, err := a.api.call(ctx, "getFile", tgbotapi.Params{"file_id": u.Ref})
	if err != nil {
		return nil, err
	}
	var f struct {
		FilePath string `json:"file_path"`
		FileSize int64  `json:"file_size"`
	}
	if err := json.Unmarshal(raw, &f); err != nil || f.FilePath == "" {
		return nil, fmt.Errorf("telegram getFile: no file_path in its answer (the file may be over the 20 MB bots may download)")
	}
	if f.FileSize > chat.TelegramDownloadLimit {
		return nil, tooBig(f.FileSize)
	}
	return a.api.download(ctx, f.FilePath)
}

func tooBig(size int64) error {
	return fmt.Errorf("telegram lets bots download files of up to %d bytes (20 MB); this one is %d bytes: send a smaller file, or put it where the hub can fetch it", int64(chat.TelegramDownloadLimit), size)
}

// download GETs a file of the Bot API's file storage by its file_path:
// <endpoint>/file/bot<token>/<file_path>. Errors never hold the token.
func (a *botAPI) download(ctx context.Context, filePath string) (io.ReadCloser, error) {
	clean := path.Clean("/" + filePath)
	if clean != "/"+filePath || strings.Contains(filePath, "..") || strings.ContainsAny(filePath, "?#\\") {
		return nil, fmt.Errorf("telegram getFile: file_path %q is not a path of the file storage", filePath)
	}
	base := strings.TrimSuffix(strings.ReplaceAll(a.endpoint, "%%", "%"), "/bot%s/%s")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/file/bot"+a.token+clean, nil)
	if err != nil {
		return nil, fmt.Errorf("telegram file download: %s", redact(err.Error(), a.token))
	}
	resp, err := a.files.Do(req)
	if err != nil {
		return nil, &callError{method: "file download", err: err, token: a.token}
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, &APIError{Method: "file download", Code: resp.StatusCode, Description: http.StatusText(resp.StatusCode)}
	}
	return resp.Body, nil
}
