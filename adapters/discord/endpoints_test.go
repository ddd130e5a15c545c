package discord

import (
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"
)

func TestSetBaseURL(t *testing.T) {
	prev := currentAPIBase()
	t.Cleanup(func() { SetBaseURL(prev) })

	base := "http://127.0.0.1:1/api/v10"
	SetBaseURL(base + "/")
	for name, got := range map[string]string{
		"EndpointAPI":                        discordgo.EndpointAPI,
		"EndpointGateway":                    discordgo.EndpointGateway,
		"EndpointGatewayBot":                 discordgo.EndpointGatewayBot,
		"EndpointChannelMessages":            discordgo.EndpointChannelMessages("1"),
		"EndpointInteractionResponse":        discordgo.EndpointInteractionResponse("2", "tok"),
		"EndpointInteractionResponseActions": discordgo.EndpointInteractionResponseActions("3", "tok"),
		"EndpointFollowupMessage":            discordgo.EndpointFollowupMessage("3", "tok"),
		"EndpointApplicationGuildCommands":   discordgo.EndpointApplicationGuildCommands("3", "4"),
		"EndpointApplicationGlobalCommands":  discordgo.EndpointApplicationGlobalCommands("3"),
		"EndpointGuild":                      discordgo.EndpointGuild("4"),
		"EndpointUser":                       discordgo.EndpointUser("@me"),
		"EndpointOAuth2Application":          discordgo.EndpointOAuth2Application("3"),
		"EndpointVoiceRegions":               discordgo.EndpointVoiceRegions,
		"EndpointUserAvatar":                 discordgo.EndpointUserAvatar("5", "abc"),
		"EndpointCDN":                        discordgo.EndpointCDN,
		"EndpointStatus":                     discordgo.EndpointSmActive,
		"EndpointStageInstances":             discordgo.EndpointStageInstances,
	} {
		if !strings.HasPrefix(got, base+"/") {
			t.Errorf("%s = %q, not under %s", name, got, base)
		}
	}
	if want := base + "/channels/1/messages"; discordgo.EndpointChannelMessages("1") != want {
		t.Errorf("EndpointChannelMessages = %q, want %q", discordgo.EndpointChannelMessages("1"), want)
	}
	if want := base + "/webhooks/3/tok/messages/@original"; discordgo.EndpointInteractionResponseActions("3", "tok") != want {
		t.Errorf("EndpointInteractionResponseActions = %q", discordgo.EndpointInteractionResponseActions("3", "tok"))
	}
	if discordgo.EndpointDiscord != "http://127.0.0.1:1/" || discordgo.APIVersion != "10" {
		t.Errorf("EndpointDiscord = %q, APIVersion = %q", discordgo.EndpointDiscord, discordgo.APIVersion)
	}

	// Discord's own base restores the real CDN and status hosts.
	SetBaseURL(DefaultAPIBase)
	if discordgo.EndpointAPI != "https://discord.com/api/v10/" || discordgo.EndpointCDN != "https://cdn.discordapp.com/" ||
		discordgo.EndpointDiscord != "https://discord.com/" || discordgo.EndpointStatus != "https://status.discord.com/api/v2/" {
		t.Errorf("defaults: API %q CDN %q Discord %q Status %q", discordgo.EndpointAPI, discordgo.EndpointCDN, discordgo.EndpointDiscord, discordgo.EndpointStatus)
	}
	if got := discordgo.EndpointChannels; got != "https://discord.com/api/v10/channels/" {
		t.Errorf("EndpointChannels = %q", got)
	}
}
