package lab

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/a6afc2ce/hermes-hub/adapters/discord/discordtest"
	"github.com/a6afc2ce/hermes-hub/adapters/telegram/telegramtest"
)

// Files through the chat (docs/uploads.md), in the lab: the action
// "upload" sends a file with its message (a Telegram document, a Discord
// attachment or slash-command attachment option, a multipart panel
// message) to be saved at up/<marker>.bin; "getfile" asks for blob.bin
// back as a file (/get). Uploads are checked by checkUploads; file replies
// are outbox chunks like any other, checked by the same invariants, and
// the documents Telegram received must hold blob.bin's bytes.

// uploadDir is where the lab's uploads are saved, in the workspace.
const uploadDir = "up"

// blobName is the workspace file the getfile action asks for.
const blobName = "blob.bin"

// blobData is blob.bin's content: binary, 48 KiB.
func blobData() []byte {
	b := make([]byte, 48<<10)
	for i := range b {
		b[i] = byte(i*7 + i/256)
	}
	return b
}

// uploadData is the file an upload turn with marker m sends: binary,
// a few KiB, distinct per marker.
func uploadData(m string) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < 6000; i++ {
		fmt.Fprintf(&b, "%s\x00\xff%05d\n", m, i)
	}
	return b.Bytes()
}

// uploadPath is where the upload of marker m is saved.
func uploadPath(m string) string { return uploadDir + "/" + m + ".bin" }

// telegramUpload is the update of an upload turn.
func (w *world) telegramUpload(id int, chat, user int64, msgID int, m string) map[string]any {
	doc := w.tg.Document(m+".bin", "application/octet-stream", telegramtest.File{Data: uploadData(m)})
	return telegramtest.TextUpdate(id, chat, user, msgID, uploadPath(m), telegramtest.WithDocument(doc))
}

// discordUploadMessage is a channel message carrying the upload of m.
func (w *world) discordUploadMessage(msg discordtest.ChannelMessage, m string) map[string]any {
	msg.Content = "!" + uploadPath(m)
	msg.Attachments = []map[string]any{w.dc.Attachment(m+".bin", "application/octet-stream", discordtest.File{Data: uploadData(m)})}
	return w.dc.MessagePayload(msg)
}

// discordUploadInteraction is /fs upload with the upload of m.
func (w *world) discordUploadInteraction(i discordtest.Interaction, m string) map[string]any {
	at := w.dc.Attachment(m+".bin", "application/octet-stream", discordtest.File{Data: uploadData(m)})
	i.Command = "fs"
	i.Options = []discordtest.Option{discordtest.Sub("upload", discordtest.Attach("file", at), discordtest.Str("path", uploadPath(m)))}
	i.Attachments = []map[string]any{at}
	return w.dc.InteractionPayload(i)
}

// postUpload sends a panel message with the upload of m, until the hub
// takes it, as post does.
func (c *webClient) postUpload(ctx context.Context, m, clientID string, limit time.Duration) (bool, error) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("text", uploadPath(m))
	_ = mw.WriteField("client_turn_id", clientID)
	fw, _ := mw.CreateFormFile("file", m+".bin")
	_, _ = fw.Write(uploadData(m))
	_ = mw.Close()
	return c.send(ctx, func() io.Reader { return bytes.NewReader(body.Bytes()) }, mw.FormDataContentType(), limit)
}

// sentUploads reports whether the scenario sent files to be saved.
func (w *world) sentUploads() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, t := range w.turns {
		if t.Action == "upload" {
			return true
		}
	}
	return false
}

// readUploads reads the files under up/ (and notes any temporary file a
// cut-short save left there) for the checks.
func readUploads(ws string) map[string][]byte {
	out := map[string][]byte{}
	ents, _ := os.ReadDir(filepath.Join(ws, uploadDir))
	for _, e := range ents {
		data, _ := os.ReadFile(filepath.Join(ws, uploadDir, e.Name()))
		out[uploadDir+"/"+e.Name()] = data
	}
	return out
}

// checkUploads: an upload is saved at most once, whole and with its own
// bytes: a file under up/ is the upload of a turn that reached the hub
// and holds exactly what it sent; a turn whose reply says it was saved
// has its file; no temporary file is left once the final upload (after
// the last restart) has run. A turn run again after a crash finds its
// file and says so (no overwrite): never a second copy.
func (c *checker) checkUploads() {
	turns := map[string]*Turn{}
	for i := range c.o.Turns {
		if t := &c.o.Turns[i]; t.Action == "upload" {
			turns[uploadPath(t.Marker)] = t
		}
	}
	for name, data := range c.o.Uploads {
		t := turns[name]
		switch {
		case strings.Contains(name, ".tmp-"):
			c.fail("uploads", "%s: a temporary file of a save cut short was left", name)
		case t == nil:
			c.fail("uploads", "%s was saved but no upload turn sent it", name)
		case !t.Delivered:
			c.fail("uploads", "%s was saved but its turn %s never reached the hub", name, t.TurnID)
		case !bytes.Equal(data, uploadData(t.Marker)):
			c.fail("uploads", "%s holds %d bytes that are not the %d its turn %s sent", name, len(data), len(uploadData(t.Marker)), t.TurnID)
		default:
			c.fig.Uploads++
		}
	}
	for name, t := range turns {
		if _, ok := c.o.Uploads[name]; !ok && c.saidSaved(t) {
			c.fail("uploads", "%s: the reply says %s was saved, but it is not there", t.TurnID, name)
		}
	}
	for _, m := range c.o.Telegram {
		if m.Method == "sendDocument" && m.DocName == blobName {
			c.fig.FileReplies++
			if !bytes.Equal(m.Doc, blobData()) {
				c.fail("uploads", "Telegram chat %s received %s with %d bytes that are not the file's", m.ChatID, blobName, len(m.Doc))
			}
		}
	}
}

// saidSaved reports whether one of t's reply chunks says its file was
// saved.
func (c *checker) saidSaved(t *Turn) bool {
	for _, id := range c.byTurn[t.TurnID] {
		if strings.Contains(c.texts[id], "Saved `"+uploadPath(t.Marker)+"`") || strings.Contains(c.texts[id], "Saved <code>"+uploadPath(t.Marker)+"</code>") {
			return true
		}
	}
	return false
}
