package discord

import (
	"net/url"
	"strings"
	"sync"

	"github.com/bwmarrin/discordgo"
)

// DefaultAPIBase is Discord's REST base URL; the gateway URL is asked of it.
const DefaultAPIBase = "https://discord.com/api/v10"

// The defaults of discordgo's endpoints that do not derive from the API base.
const (
	defaultDiscord = "https://discord.com/"
	defaultCDN     = "https://cdn.discordapp.com/"
	defaultStatus  = "https://status.discord.com/api/v2/"
)

var endpointsMu sync.Mutex

// SetBaseURL points every endpoint variable of discordgo at base, the REST
// base URL such as DefaultAPIBase or a test server's "http://127.0.0.1:port/api/v10".
// discordgo computes its endpoint strings once at start, so each one is
// reassigned here; its endpoint functions read them at call time. When base
// is not Discord's own, the CDN and status endpoints move under base as well,
// so that nothing reaches the real service. A trailing "/v<N>" sets the
// gateway API version. Call it before any session is opened: discordgo reads
// these variables without synchronisation.
func SetBaseURL(base string) {
	endpointsMu.Lock()
	defer endpointsMu.Unlock()
	base = strings.TrimRight(base, "/")
	if base == "" {
		base = DefaultAPIBase
	}
	if v := apiVersion(base); v != "" {
		discordgo.APIVersion = v
	}
	api := base + "/"
	discord, cdn, status := defaultDiscord, defaultCDN, defaultStatus
	if base != DefaultAPIBase {
		discord = origin(base) + "/"
		cdn = base + "/cdn/"
		status = base + "/status/"
	}

	discordgo.EndpointStatus = status
	discordgo.EndpointSm = discordgo.EndpointStatus + "scheduled-maintenances/"
	discordgo.EndpointSmActive = discordgo.EndpointSm + "active.json"
	discordgo.EndpointSmUpcoming = discordgo.EndpointSm + "upcoming.json"

	discordgo.EndpointDiscord = discord
	discordgo.EndpointAPI = api
	discordgo.EndpointGuilds = api + "guilds/"
	discordgo.EndpointChannels = api + "channels/"
	discordgo.EndpointUsers = api + "users/"
	discordgo.EndpointGateway = api + "gateway"
	discordgo.EndpointGatewayBot = discordgo.EndpointGateway + "/bot"
	discordgo.EndpointWebhooks = api + "webhooks/"
	discordgo.EndpointStickers = api + "stickers/"
	discordgo.EndpointStageInstances = api + "stage-instances"
	discordgo.EndpointSKUs = api + "skus"

	discordgo.EndpointCDN = cdn
	discordgo.EndpointCDNAttachments = cdn + "attachments/"
	discordgo.EndpointCDNAvatars = cdn + "avatars/"
	discordgo.EndpointCDNIcons = cdn + "icons/"
	discordgo.EndpointCDNSplashes = cdn + "splashes/"
	discordgo.EndpointCDNChannelIcons = cdn + "channel-icons/"
	discordgo.EndpointCDNBanners = cdn + "banners/"
	discordgo.EndpointCDNGuilds = cdn + "guilds/"
	discordgo.EndpointCDNRoleIcons = cdn + "role-icons/"

	// discordgo spells these two with a doubled slash; kept as it does.
	discordgo.EndpointVoice = api + "/voice/"
	discordgo.EndpointVoiceRegions = discordgo.EndpointVoice + "regions"
	discordgo.EndpointNitroStickersPacks = api + "/sticker-packs"

	discordgo.EndpointGuildCreate = api + "guilds"
	discordgo.EndpointApplications = api + "applications"

	discordgo.EndpointOAuth2 = api + "oauth2/"
	discordgo.EndpointOAuth2Applications = discordgo.EndpointOAuth2 + "applications"
	discordgo.EndpointOauth2 = discordgo.EndpointOAuth2
	discordgo.EndpointOauth2Applications = discordgo.EndpointOAuth2Applications
}

// apiVersion returns N of a base ending in "/v<N>", or "".
func apiVersion(base string) string {
	i := strings.LastIndex(base, "/v")
	if i < 0 {
		return ""
	}
	v := base[i+2:]
	if v == "" {
		return ""
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return ""
		}
	}
	return v
}

// origin returns scheme://host of u, or u itself when it does not parse.
func origin(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Scheme == "" || p.Host == "" {
		return u
	}
	return p.Scheme + "://" + p.Host
}

// currentAPIBase is the REST base discordgo is pointed at, without the
// trailing slash.
func currentAPIBase() string {
	endpointsMu.Lock()
	defer endpointsMu.Unlock()
	return strings.TrimRight(discordgo.EndpointAPI, "/")
}
