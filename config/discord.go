package config

import (
	"net/url"
	"strings"
)

// Discord configures the Discord adapter.
type Discord struct {
	Enabled         bool     `yaml:"enabled"`
	Token           Secret   `yaml:"token"`
	TokenFile       string   `yaml:"token_file"`
	ApplicationID   string   `yaml:"application_id"`
	APIBase         string   `yaml:"api_base"`
	CommandGuilds   []string `yaml:"command_guilds"`
	Prefix          string   `yaml:"prefix"`
	Mention         *bool    `yaml:"mention"`
	AllowedGuilds   []string `yaml:"allowed_guilds"`
	AllowedChannels []string `yaml:"allowed_channels"`
	// MaxFileBytes is the largest file the hub attaches to a message:
	// Discord's limit for the servers it serves (10MiB without boosts;
	// more in boosted servers). Larger files are offered in parts.
	MaxFileBytes Size `yaml:"max_file_bytes"`
	// CDNBase is the scheme and host of Discord's CDN: the files people
	// attach are fetched from there and from nowhere else.
	CDNBase string `yaml:"cdn_base"`
}

func (d *Discord) applyDefaults(*Config) {
	setDefault(&d.APIBase, "https://discord.com/api/v10")
	defaultTrue(&d.Mention)
	setDefault(&d.MaxFileBytes, Size(10<<20))
	setDefault(&d.CDNBase, "https://cdn.discordapp.com")
}

// validate checks the adapter's settings; nothing when it is off.
func (d *Discord) validate(_ *Config, v *validator) {
	if d.MaxFileBytes < 1 || d.MaxFileBytes > 500<<20 {
		v.bad("discord.max_file_bytes", ": %d is out of range (accepted: 1 byte to 500MiB; Discord's limit for your servers, 10MiB without boosts)", d.MaxFileBytes)
	}
	if u, err := url.Parse(d.CDNBase); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.Fragment != "" {
		v.bad("discord.cdn_base", ": %q is not a scheme and host (accepted: an http or https URL without path, such as https://cdn.discordapp.com)", d.CDNBase)
	}
	if !d.Enabled {
		return
	}
	if !d.Token.IsSet() {
		v.badAt("discord.enabled", "discord.token", " is empty but discord.enabled is true: set it from the environment, e.g. token: ${DISCORD_BOT_TOKEN}, or name a file holding it in discord.token_file")
	}
	for _, ids := range []struct {
		key  string
		list []string
	}{{"discord.command_guilds", d.CommandGuilds}, {"discord.allowed_guilds", d.AllowedGuilds}, {"discord.allowed_channels", d.AllowedChannels}} {
		for i, id := range ids.list {
			if !isSnowflake(id) {
				v.badAt(item(ids.key, i), ids.key, ": %q is not a Discord id (digits only)", id)
			}
		}
	}
	if d.ApplicationID != "" && !isSnowflake(d.ApplicationID) {
		v.bad("discord.application_id", ": %q is not a Discord id (digits only)", d.ApplicationID)
	}
}

func (d *Discord) secretFiles() []secretFile {
	return []secretFile{{key: "discord.token_file", path: d.TokenFile, tokenKey: "discord.token", token: d.Token, setToken: func(s Secret) { d.Token = s }}}
}

// isSnowflake reports whether s is a Discord id: 1 to 20 digits.
func isSnowflake(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
