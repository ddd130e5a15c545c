package config

import (
	"strings"
	"time"
)

// Telegram configures the Telegram adapter.
type Telegram struct {
	Enabled     bool     `yaml:"enabled"`
	Token       Secret   `yaml:"token"`
	TokenFile   string   `yaml:"token_file"`
	APIEndpoint string   `yaml:"api_endpoint"`
	Mode        string   `yaml:"mode"` // polling or webhook
	PollTimeout Duration `yaml:"poll_timeout"`
	Webhook     struct {
		Path            string `yaml:"path"`
		SecretToken     Secret `yaml:"secret_token"`
		SecretTokenFile string `yaml:"secret_token_file"`
	} `yaml:"webhook"`
	Rate struct {
		PerChat           float64 `yaml:"per_chat_per_second"`
		PerChatBurst      int     `yaml:"per_chat_burst"`
		PerGroupPerMinute int     `yaml:"per_group_per_minute"`
		GlobalPerSecond   int     `yaml:"global_per_second"`
	} `yaml:"rate"`
	SetCommands *bool `yaml:"set_commands"`
}

func (t *Telegram) applyDefaults(*Config) {
	setDefault(&t.APIEndpoint, "https://api.telegram.org")
	setDefault(&t.Mode, "polling")
	setDefault(&t.PollTimeout, Duration(30*time.Second))
	setDefault(&t.Webhook.Path, "/telegram/webhook")
	setDefault(&t.Rate.PerChat, 1)
	setDefault(&t.Rate.PerChatBurst, 3)
	setDefault(&t.Rate.PerGroupPerMinute, 20)
	setDefault(&t.Rate.GlobalPerSecond, 30)
	defaultTrue(&t.SetCommands)
}

// validate checks the adapter's settings; nothing when it is off.
func (t *Telegram) validate(c *Config, v *validator) {
	if !t.Enabled {
		return
	}
	if !t.Token.IsSet() {
		v.badAt("telegram.enabled", "telegram.token", " is empty but telegram.enabled is true: set it from the environment, e.g. token: ${TELEGRAM_BOT_TOKEN}, or name a file holding it in telegram.token_file")
	}
	v.oneOf("telegram.mode", t.Mode, "polling", "webhook")
	if !strings.HasPrefix(t.APIEndpoint, "http://") && !strings.HasPrefix(t.APIEndpoint, "https://") {
		v.bad("telegram.api_endpoint", ": %q must start with http:// or https://", t.APIEndpoint)
	}
	if t.Mode == "webhook" {
		if c.Web.PublicURL == "" {
			v.badAt("telegram.mode", "telegram.mode", " is webhook, so web.public_url must be set to the https address Telegram can reach")
		}
		if !t.Webhook.SecretToken.IsSet() {
			v.badAt("telegram.mode", "telegram.webhook.secret_token", " must be set in webhook mode (1-256 characters A-Z a-z 0-9 _ -)")
		}
		if !*c.Web.Enabled {
			v.badAt("telegram.mode", "telegram.mode", " is webhook, which needs the web listener (web.enabled: true)")
		}
	}
	if t.PollTimeout.D() < 0 || t.PollTimeout.D() > 50*time.Second {
		v.bad("telegram.poll_timeout", ": %s is out of range (0s to 50s)", t.PollTimeout)
	}
	if t.Rate.PerChat < 0 || t.Rate.GlobalPerSecond < 0 || t.Rate.PerGroupPerMinute < 0 {
		v.bad("telegram.rate", ": values must not be negative")
	}
}

func (t *Telegram) secretFiles() []secretFile {
	return []secretFile{
		{key: "telegram.token_file", path: t.TokenFile, tokenKey: "telegram.token", token: t.Token, setToken: func(s Secret) { t.Token = s }},
		{key: "telegram.webhook.secret_token_file", path: t.Webhook.SecretTokenFile, tokenKey: "telegram.webhook.secret_token", token: t.Webhook.SecretToken, setToken: func(s Secret) { t.Webhook.SecretToken = s }},
	}
}
