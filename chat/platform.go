package chat

import (
	"fmt"
	"strings"
)

// Platform names a chat platform.
type Platform string

// The platforms the hub speaks.
const (
	Telegram Platform = "telegram"
	Discord  Platform = "discord"
	Web      Platform = "web"
)

// Spec is what the hub knows of a chat platform without its adapter: how
// its chats are spelled in keys and how long one of its messages may be.
// The configuration, the command line, the outbox and the chunker read it
// where no adapter runs; the adapter itself is attached at run time
// (hub.Platform).
type Spec struct {
	Name Platform
	// ChatForm is how a chat of the platform is spelled after
	// "<platform>:", for errors and help: "<chat_id>[:<thread_id>]".
	ChatForm string
	// MaxUnits is the most UTF-16 code units one message may hold.
	MaxUnits int
	// MaxFileBytes is the largest file a bot may send to one of its chats
	// by default (docs/uploads.md); the configuration may lower or raise it
	// where the platform lets it vary (a Discord server's boost level).
	MaxFileBytes int64
	// MaxUploadBytes is the largest file a person may send the hub there
	// that the platform lets a bot download; 0: the platform sets no limit
	// of its own for bots (the person's own limit applies).
	MaxUploadBytes int64
	// parse fills c from the parts of a channel key after the platform
	// name (at least one), saying what is wrong with them.
	parse func(c *ChannelKey, parts []string) error
}

// specs are the chat platforms, one row each, in the order errors and help
// list them. The web panel is not one: its key is "web".
var specs = []Spec{
	{Name: Telegram, ChatForm: "<chat_id>[:<thread_id>]", MaxUnits: TelegramLimit, MaxFileBytes: TelegramFileLimit, MaxUploadBytes: TelegramDownloadLimit, parse: parseTelegram},
	{Name: Discord, ChatForm: "<channel_id>", MaxUnits: DiscordLimit, MaxFileBytes: DiscordFileLimit, parse: parseDiscord},
}

// The platforms' limits on files (docs/uploads.md): Telegram's Bot API sends
// documents of up to 50 MB and lets a bot download files of up to 20 MB;
// Discord takes attachments of up to 10 MiB in a server without boosts
// (more in boosted ones: discord.max_file_bytes).
const (
	TelegramFileLimit     = 50 << 20
	TelegramDownloadLimit = 20 << 20
	DiscordFileLimit      = 10 << 20
)

// Accepted spellings, derived from specs and shown in every parse error.
var (
	// AcceptedKeyForms lists the canonical target keys.
	AcceptedKeyForms = "accepted: web, local:<path>" + formList(", chat:")
	// AcceptedChannelForms lists the channel-directory keys.
	AcceptedChannelForms = "accepted: " + strings.TrimPrefix(formList(", "), ", ")
	// acceptedTargetForms lists what an operator may type as a target.
	acceptedTargetForms = "accepted: web, local:<path>" + formList(", ") + ", or a full chat:… key"
)

// formList is every platform's "<prefix><name>:<chat form>".
func formList(prefix string) string {
	var b strings.Builder
	for _, s := range specs {
		b.WriteString(prefix + string(s.Name) + ":" + s.ChatForm)
	}
	return b.String()
}

// Specs returns the chat platforms the hub speaks.
func Specs() []Spec { return append([]Spec(nil), specs...) }

// SpecOf returns the spec of chat platform p; ok is false for web and for
// platforms the hub does not speak.
func SpecOf(p Platform) (s Spec, ok bool) {
	for _, s := range specs {
		if s.Name == p {
			return s, true
		}
	}
	return Spec{}, false
}

// strictestLimit is the smallest MaxUnits of every spec: the limit of a
// platform the hub does not know.
func strictestLimit() int {
	n := 0
	for _, s := range specs {
		if n == 0 || s.MaxUnits < n {
			n = s.MaxUnits
		}
	}
	return n
}

func parseTelegram(c *ChannelKey, parts []string) error {
	if len(parts) > 2 {
		return fmt.Errorf("too many parts")
	}
	if !isInt(c.ChatID, true) {
		return fmt.Errorf("telegram chat id %q is not an integer", c.ChatID)
	}
	if len(parts) == 2 {
		c.ThreadID = parts[1]
		if !isInt(c.ThreadID, false) || c.ThreadID == "0" {
			return fmt.Errorf("telegram thread id %q is not a positive integer", c.ThreadID)
		}
	}
	return nil
}

func parseDiscord(c *ChannelKey, parts []string) error {
	if len(parts) > 1 {
		return fmt.Errorf("discord keys have no thread part (a Discord thread is a channel of its own)")
	}
	if !isInt(c.ChatID, false) {
		return fmt.Errorf("discord channel id %q is not a snowflake (digits only)", c.ChatID)
	}
	return nil
}
