package telegram

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
)

// ErrTokenRejected is a token the Bot API refused (401, or 404 for a token
// it does not know).
var ErrTokenRejected = errors.New("token rejected by the Bot API")

// tokenShape is a Bot API token as @BotFather gives it: the bot's id, a
// colon, the secret.
var tokenShape = regexp.MustCompile(`^[0-9]+:[A-Za-z0-9_-]+$`)

// CheckTokenShape says whether token has the shape of a Bot API token. It
// tells nothing of whether Telegram accepts it, and never repeats it.
func CheckTokenShape(token string) error {
	if tokenShape.MatchString(token) {
		return nil
	}
	return errors.New("not a Bot API token: a token is <bot id>:<secret> (digits, a colon, then letters, digits, - and _), as @BotFather gives it")
}

// CheckToken asks the Bot API at endpoint (telegram.api_endpoint) whose
// token it is (getMe) and returns the bot's username. A refused token is
// an error wrapping ErrTokenRejected; any other error is a Bot API that
// could not be reached or did not answer as one. ctx bounds the call. No
// error holds the token.
func CheckToken(ctx context.Context, token, endpoint string) (string, error) {
	api, err := newBotAPI(token, endpoint, defaultClient(0))
	if err != nil {
		return "", err
	}
	me, err := api.getMe(ctx)
	var ae *APIError
	if errors.As(err, &ae) && (ae.Code == http.StatusUnauthorized || ae.Code == http.StatusNotFound) {
		return "", fmt.Errorf("%w (%d %s)", ErrTokenRejected, ae.Code, ae.Description)
	}
	if err != nil {
		return "", err
	}
	return me.Username, nil
}
