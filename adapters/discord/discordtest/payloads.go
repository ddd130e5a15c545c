package discordtest

import "time"

// Option is one slash command option in an interaction payload: a
// subcommand (type 1) with its options in Sub, or a value.
type Option struct {
	Name  string
	Type  int
	Value any
	Sub   []Option
}

// JSON is the option as Discord sends it.
func (o Option) JSON() map[string]any {
	m := map[string]any{"name": o.Name, "type": o.Type}
	if o.Value != nil {
		m["value"] = o.Value
	}
	if len(o.Sub) > 0 {
		var subs []any
		for _, s := range o.Sub {
			subs = append(subs, s.JSON())
		}
		m["options"] = subs
	}
	return m
}

// Sub is a subcommand option holding opts.
func Sub(name string, opts ...Option) Option { return Option{Name: name, Type: 1, Sub: opts} }

// Str is a string option.
func Str(name, v string) Option { return Option{Name: name, Type: 3, Value: v} }

// Integer is an integer option.
func Integer(name string, v int) Option { return Option{Name: name, Type: 4, Value: v} }

// Interaction describes an application command interaction. Guild empty
// means a direct message.
type Interaction struct {
	ID, Token, Channel, Guild, User string
	Roles                           []string
	Command                         string
	Options                         []Option
	// Attachments are the resolved attachments the options name (Attach).
	Attachments []map[string]any
}

// InteractionPayload is the INTERACTION_CREATE data of i.
func (s *Server) InteractionPayload(i Interaction) map[string]any {
	var opts []any
	for _, o := range i.Options {
		opts = append(opts, o.JSON())
	}
	p := map[string]any{
		"id": i.ID, "application_id": s.AppID, "type": 2, "token": i.Token, "version": 1,
		"channel_id": i.Channel, "locale": "en-US",
		"data": map[string]any{"id": "800000000000000001", "name": i.Command, "type": 1, "options": opts},
	}
	if len(i.Attachments) > 0 {
		p["data"].(map[string]any)["resolved"] = resolved(i.Attachments)
	}
	user := map[string]any{"id": i.User, "username": "user" + suffix(i.User)}
	if i.Guild != "" {
		p["guild_id"] = i.Guild
		roles := i.Roles
		if roles == nil {
			roles = []string{}
		}
		p["member"] = map[string]any{"user": user, "roles": roles}
	} else {
		p["user"] = user
	}
	return p
}

// ChannelMessage describes a message posted in a channel. Guild empty
// means a direct message.
type ChannelMessage struct {
	ID, Channel, Guild, User, Content string
	Roles                             []string
	Bot                               bool
	// Attachments are the files attached to it (Server.Attachment).
	Attachments []map[string]any
}

// MessagePayload is the MESSAGE_CREATE data of m.
func (s *Server) MessagePayload(m ChannelMessage) map[string]any {
	p := map[string]any{
		"id": m.ID, "channel_id": m.Channel, "content": m.Content, "type": 0,
		"timestamp": time.Now().UTC().Format(time.RFC3339Nano),
		"author":    map[string]any{"id": m.User, "username": "user" + suffix(m.User), "bot": m.Bot},
		"mentions":  []any{},
	}
	if len(m.Attachments) > 0 {
		p["attachments"] = attachmentsOf(m.Attachments)
	}
	if m.Guild != "" {
		p["guild_id"] = m.Guild
		roles := m.Roles
		if roles == nil {
			roles = []string{}
		}
		p["member"] = map[string]any{"roles": roles}
	}
	return p
}

// suffix is the last three characters of an id, for a readable user name.
func suffix(id string) string {
	if len(id) <= 3 {
		return id
	}
	return id[len(id)-3:]
}

// Press describes a press on a message's button (a message component
// interaction). Guild empty means a direct message.
type Press struct {
	ID, Token, Channel, Guild, User string
	Roles                           []string
	// Message is the message the button is on; CustomID the button's.
	Message, CustomID string
}

// PressPayload is the INTERACTION_CREATE data of p.
func (s *Server) PressPayload(p Press) map[string]any {
	out := map[string]any{
		"id": p.ID, "application_id": s.AppID, "type": 3, "token": p.Token, "version": 1,
		"channel_id": p.Channel, "locale": "en-US",
		"data":    map[string]any{"custom_id": p.CustomID, "component_type": 2},
		"message": map[string]any{"id": p.Message, "channel_id": p.Channel, "content": "", "type": 0},
	}
	user := map[string]any{"id": p.User, "username": "user" + suffix(p.User)}
	if p.Guild != "" {
		out["guild_id"] = p.Guild
		roles := p.Roles
		if roles == nil {
			roles = []string{}
		}
		out["member"] = map[string]any{"user": user, "roles": roles}
	} else {
		out["user"] = user
	}
	return out
}
