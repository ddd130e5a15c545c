package config

import (
	"testing"
)

// TestAccessChats: access.chats takes grants and a ceiling per chat
// scope; each wrong entry is told what is accepted.
func TestAccessChats(t *testing.T) {
	const ok = `access:
  roles:
    ops: {verbs: ["fs.*"]}
  chats:
    "telegram:chat:-100123": {grants: {"telegram:42": [ops]}}
    "telegram:chat:-100123:7": {max_roles: [reader]}
    "discord:channel:800000000000000001": {grants: {"discord-role:700000000000000001": [ops]}}
    "discord:guild:900000000000000001": {max_roles: [reader, ops]}
`
	cfg := &Config{}
	if err := Parse([]byte(ok), env(nil), cfg); err != nil {
		t.Fatal(err)
	}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if r := cfg.Access.Chats["telegram:chat:-100123"].Grants["telegram:42"]; len(r) != 1 || r[0] != "ops" {
		t.Fatalf("chats %+v", cfg.Access.Chats)
	}
	const head = "access:\n  roles:\n    ops: {verbs: [\"fs.*\"]}\n  chats:\n"
	for _, tc := range []struct{ name, yml, want string }{
		{"scope", head + "    \"telegram:-100999\": {max_roles: [reader]}\n",
			`line 5: access.chats: "telegram:-100999" is not a chat scope (accepted: telegram:chat:<chat_id>, telegram:chat:<chat_id>:<topic_id>, discord:channel:<channel_id> or discord:guild:<guild_id>)`},
		{"topic", head + "    \"telegram:chat:-100999:x\": {max_roles: [reader]}\n", `line 5: access.chats: "telegram:chat:-100999:x" is not a chat scope`},
		{"identity", head + "    \"telegram:chat:-1\": {grants: {\"alice\": [ops]}}\n", `line 5: access.chats.telegram:chat:-1.grants: "alice" is not an identity`},
		{"grant role", head + "    \"telegram:chat:-1\": {grants: {\"telegram:2\": [root]}}\n", `line 5: access.chats.telegram:chat:-1.grants.telegram:2: role "root" is not defined`},
		{"ceiling role", head + "    \"telegram:chat:-1\": {max_roles: [root]}\n", `line 5: access.chats.telegram:chat:-1.max_roles: role "root" is not defined`},
		{"empty ceiling", head + "    \"telegram:chat:-1\": {max_roles: []}\n", `line 5: access.chats.telegram:chat:-1.max_roles is empty, which would let no one do anything here`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			refusedWith(t, tc.yml, tc.want)
		})
	}
}

// TestConfirmKeys: a role's confirm and approvers, and access.confirm_ttl,
// are checked; each wrong value is told what is accepted.
func TestConfirmKeys(t *testing.T) {
	const head = "access:\n  roles:\n    boss: {verbs: [\"fs.*\"]}\n"
	ok := head + "    ops: {verbs: [\"fs.*\", \"cmd.*\"], confirm: [\"fs.delete*\", cmd.deploy], approvers: [boss]}\n  confirm_ttl: 30m\n"
	cfg := &Config{}
	if err := Parse([]byte(ok), env(nil), cfg); err != nil {
		t.Fatal(err)
	}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil || cfg.Access.ConfirmTTL.D().Minutes() != 30 || cfg.Access.Roles["ops"].Approvers[0] != "boss" {
		t.Fatalf("%+v %v", cfg.Access, err)
	}
	for _, tc := range []struct{ name, yml, want string }{
		{"pattern", head + "    ops: {verbs: [\"fs.*\"], confirm: [\"fs.[\"]}\n", `line 4: access.roles.ops.confirm: "fs.[" is not a verb pattern`},
		{"admin permission", head + "    ops: {verbs: [\"fs.*\"], confirm: [admin.access]}\n", `line 4: access.roles.ops.confirm: "admin.access" is not a verb pattern`},
		{"approver", head + "    ops: {verbs: [\"fs.*\"], confirm: [proc.run], approvers: [chief]}\n", `line 4: access.roles.ops.approvers: role "chief" is not defined`},
		{"approvers without confirm", head + "    ops: {verbs: [\"fs.*\"], approvers: [boss]}\n", `line 4: access.roles.ops.approvers: approvers approve the calls confirm holds, and confirm is empty`},
		{"ttl", head + "  confirm_ttl: 10s\n", `line 4: access.confirm_ttl: 10s is out of range (accepted: from 1m to 168h)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			refusedWith(t, tc.yml, tc.want)
		})
	}
}
