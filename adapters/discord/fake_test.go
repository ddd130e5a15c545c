package discord

import (
	"testing"

	"github.com/a6afc2ce/hermes-hub/adapters/discord/discordtest"
)

// The fake Discord lives in discordtest; these names keep the tests short.
type (
	fakeMessage = discordtest.Message
	fault       = discordtest.Fault
	opt         = discordtest.Option
	interaction = discordtest.Interaction
	channelMsg  = discordtest.ChannelMessage
)

var (
	sub       = discordtest.Sub
	str       = discordtest.Str
	integer   = discordtest.Integer
	rateLimit = discordtest.RateLimit
)

// newFakeDiscord starts a fake Discord that accepts botToken and closes
// when the test ends.
func newFakeDiscord(t testing.TB) *discordtest.Server {
	f := discordtest.NewServer()
	f.SetToken(botToken)
	t.Cleanup(f.Close)
	return f
}
