package discord

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"regexp"
	"strings"

	"github.com/bwmarrin/discordgo"
)

// ErrTokenRejected is a token Discord refused (401).
var ErrTokenRejected = errors.New("token rejected by Discord")

// tokenShape is a bot token as the developer portal gives it: three
// base64url parts joined by dots.
var tokenShape = regexp.MustCompile(`^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$`)

// CheckTokenShape says whether token has the shape of a bot token. It
// tells nothing of whether Discord accepts it, and never repeats it.
func CheckTokenShape(token string) error {
	if strings.HasPrefix(token, "Bot ") {
		return errors.New(`not a bot token: it starts with "Bot ", which the hub adds itself; give the token alone`)
	}
	if tokenShape.MatchString(token) {
		return nil
	}
	return errors.New("not a bot token: a token is three parts of letters, digits, - and _ joined by dots, as the developer portal's Bot page gives it (Reset Token)")
}

// CheckToken asks Discord's REST API at apiBase (discord.api_base) whose
// token it is (GET /users/@me) and returns the bot user's name. A refused
// token is an error wrapping ErrTokenRejected; any other error is an API
// that could not be reached or did not answer as Discord's. ctx bounds the
// call. No error holds the token.
func CheckToken(ctx context.Context, token, apiBase string) (string, error) {
	url := strings.TrimRight(apiBase, "/") + "/users/@me"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", fmt.Errorf("discord api_base %q: %w", apiBase, err)
	}
	req.Header.Set("Authorization", "Bot "+token)
	req.Header.Set("User-Agent", "DiscordBot (https://github.com/bwmarrin/discordgo, v"+discordgo.VERSION+")") // as the adapter's session
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		var ue *neturl.Error
		if errors.As(err, &ue) {
			err = ue.Err // the cause, without the URL said again
		}
		return "", fmt.Errorf("discord GET /users/@me: %s", strings.ReplaceAll(err.Error(), token, "[token]"))
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var me struct {
		Username string `json:"username"`
		Message  string `json:"message"`
	}
	decoded := json.Unmarshal(body, &me) == nil
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return "", fmt.Errorf("%w (%s)", ErrTokenRejected, cmp.Or(me.Message, "401: Unauthorized"))
	case resp.StatusCode != http.StatusOK || !decoded || me.Username == "":
		return "", fmt.Errorf("discord GET /users/@me: HTTP %d, not the bot user Discord answers with: check discord.api_base", resp.StatusCode)
	}
	return me.Username, nil
}
