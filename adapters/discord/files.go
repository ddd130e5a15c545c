package discord

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/outbox"
	"github.com/bwmarrin/discordgo"
)

// Files through the chat (docs/uploads.md): a message's attachment, or the
// attachment option of a slash command whose verb saves a file, is an
// upload the hub saves with fs.upload. The adapter fetches it from its
// URL only when that URL is on Discord's CDN (discord.cdn_base): an
// attachment URL comes from the event, and a hub that fetched any URL it
// was handed would reach whatever its network reaches.

// fileOption is the name of the attachment option of a slash command
// whose verb saves a file.
const fileOption = "file"

// attachmentUpload is the upload of a Discord attachment.
func attachmentUpload(at *discordgo.MessageAttachment) *chat.Upload {
	if at == nil || at.URL == "" {
		return nil
	}
	name := at.Filename
	if name == "" {
		name = "attachment-" + at.ID
	}
	return &chat.Upload{Name: name, Size: int64(at.Size), MIME: at.ContentType, Ref: at.URL}
}

// messageUpload is the first attachment of m, or nil; extra counts the
// others, which are not saved.
func messageUpload(m *discordgo.Message) (u *chat.Upload, extra int) {
	for _, at := range m.Attachments {
		if u == nil {
			u = attachmentUpload(at)
			continue
		}
		extra++
	}
	return u, extra
}

// Open fetches an attachment (hub.FileSource): a GET of its URL, which must
// be on the configured CDN (scheme, host and port); redirects are not
// followed. The caller bounds it with ctx and reads at most the announced
// size.
func (a *Adapter) Open(ctx context.Context, u *chat.Upload) (io.ReadCloser, error) {
	target, err := a.cdnURL(u.Ref)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("discord attachment: %w", err)
	}
	resp, err := a.files.Do(req)
	if err != nil {
		// Not the URL's error text: it would carry the signed query.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("discord attachment %s: %w", target.Path, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("discord attachment %s: HTTP %d from the CDN", target.Path, resp.StatusCode)
	}
	return resp.Body, nil
}

// cdnURL parses an attachment URL and checks it is on the CDN.
func (a *Adapter) cdnURL(ref string) (*url.URL, error) {
	cdn, err := url.Parse(a.cfg.CDNBase)
	if err != nil || cdn.Host == "" {
		return nil, fmt.Errorf("discord attachment: discord.cdn_base %q is not a URL", a.cfg.CDNBase)
	}
	u, err := url.Parse(ref)
	if err != nil || u.Scheme != cdn.Scheme || !strings.EqualFold(u.Host, cdn.Host) || u.User != nil {
		return nil, fmt.Errorf("discord attachment: %q is not on Discord's CDN (%s, discord.cdn_base): not fetched", redactQuery(ref), a.cfg.CDNBase)
	}
	return u, nil
}

// redactQuery drops an attachment URL's query (Discord signs CDN links
// there) for messages.
func redactQuery(ref string) string {
	base, _, _ := strings.Cut(ref, "?")
	return base
}

// noRedirects is the CheckRedirect of the client that fetches attachments:
// a redirect could lead off the CDN.
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// newFileClient is the client that fetches attachments: no overall
// timeout (the download's context bounds it, uploads.timeout), no
// redirects.
func newFileClient() *http.Client {
	return &http.Client{CheckRedirect: noRedirects}
}

// loadFile reads the bytes of a stored file an entry carries into m's
// file: discordgo sends a multipart body from memory, and a stored file is
// at most discord.max_file_bytes. Reading checks the bytes against their
// SHA-256 (the outbox turns a mismatch into a dead letter).
func loadFile(e *outbox.Entry, m *message) error {
	a := e.Attachment
	if a == nil || !a.Stored() || m.File == nil {
		return nil
	}
	r, err := a.Reader()
	if err != nil {
		return outbox.Permanent(err)
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, a.Size+1))
	if err != nil {
		return fmt.Errorf("read file %s: %w", a.Name, err)
	}
	if int64(len(data)) != a.Size {
		return outbox.Permanent(fmt.Errorf("file %s: %d bytes stored, %d recorded", a.Name, len(data), a.Size))
	}
	m.File.Data = data
	return nil
}
