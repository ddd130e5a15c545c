package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const fileToken = "file-token-0123456789abcdef"

func writeTokenFile(t *testing.T, dir, name, content string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTokenFiles(t *testing.T) {
	dir := t.TempDir()
	good := writeTokenFile(t, dir, "web-token", fileToken+"\n", 0o600)
	crlf := writeTokenFile(t, dir, "crlf", fileToken+"\r\n", 0o400)
	bare := writeTokenFile(t, dir, "bare", fileToken, 0o600)
	group := writeTokenFile(t, dir, "group", fileToken+"\n", 0o640)
	world := writeTokenFile(t, dir, "world", fileToken+"\n", 0o604)
	empty := writeTokenFile(t, dir, "empty", "\n", 0o600)
	credEnv := env(map[string]string{"CREDENTIALS_DIRECTORY": dir, "TOKEN": "env-token-0123456789abcdef"})

	t.Run("read", func(t *testing.T) {
		yml := "web:\n  token_file: ${CREDENTIALS_DIRECTORY}/web-token\n" +
			"telegram:\n  enabled: true\n  token_file: " + crlf + "\n  mode: webhook\n  webhook:\n    secret_token_file: " + bare + "\n" +
			"discord:\n  enabled: true\n  token_file: " + good + "\n  token: ${UNSET_TOKEN:-}\n"
		p := filepath.Join(t.TempDir(), "hub.yml")
		os.WriteFile(p, []byte(strings.Replace(yml, "web:\n", "web:\n  public_url: https://hub.example\n", 1)), 0o600)
		cfg, err := LoadWith(p, credEnv)
		if err != nil {
			t.Fatal(err)
		}
		for name, s := range map[string]Secret{"web": cfg.Web.Token, "telegram": cfg.Telegram.Token, "webhook": cfg.Telegram.Webhook.SecretToken, "discord": cfg.Discord.Token} {
			if s.Reveal() != fileToken {
				t.Errorf("%s token %q, want the file's content without its line ending", name, s.Reveal())
			}
		}
	})

	for _, tc := range []struct{ name, yaml, want string }{
		{"group readable", "web:\n  token_file: " + group + "\n", "web.token_file: " + group + " has mode 0640, readable by other users: chmod 600"},
		{"world readable", "discord:\n  token_file: " + world + "\n", "discord.token_file: " + world + " has mode 0604"},
		{"both set", "telegram:\n  token: ${TOKEN}\n  token_file: " + good + "\n", "telegram.token and telegram.token_file are both set: keep one"},
		{"both set webhook", "telegram:\n  webhook:\n    secret_token: ${TOKEN}\n    secret_token_file: " + good + "\n", "telegram.webhook.secret_token and telegram.webhook.secret_token_file are both set"},
		{"missing", "web:\n  token_file: " + filepath.Join(dir, "nope") + "\n", "web.token_file: open " + filepath.Join(dir, "nope") + ": no such file"},
		{"empty", "web:\n  token_file: " + empty + "\n", "web.token_file: " + empty + " is empty"},
		{"directory", "web:\n  token_file: " + t.TempDir() + "\n", "is not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "hub.yml")
			os.WriteFile(p, []byte(tc.yaml), 0o600)
			_, err := LoadWith(p, credEnv)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), fileToken) || strings.Contains(err.Error(), "env-token") {
				t.Fatalf("the error shows a token: %v", err)
			}
		})
	}
}

func TestProcLimits(t *testing.T) {
	cfg, err := LoadWith("", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if p := cfg.Verbs.Proc; p.MaxProcs != 256 || p.MaxMemory != 4<<30 || p.MaxCPUSeconds != 0 || p.KeepOutput.D() != 168*time.Hour || p.User != "" {
		t.Errorf("defaults %+v", p)
	}
	p := filepath.Join(t.TempDir(), "hub.yml")
	os.WriteFile(p, []byte("verbs:\n  proc:\n    max_procs: 16\n    max_memory: 512MiB\n    max_cpu_seconds: 30\n    user: builder\n"), 0o600)
	if cfg, err = LoadWith(p, env(nil)); err != nil {
		t.Fatal(err)
	}
	if p := cfg.Verbs.Proc; p.MaxProcs != 16 || p.MaxMemory != 512<<20 || p.MaxCPUSeconds != 30 || p.User != "builder" {
		t.Errorf("values %+v", p)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"max_procs: -1", "verbs.proc.max_procs: -1 is out of range (accepted: 1 to 1048576"},
		{"max_memory: 1MiB", "verbs.proc.max_memory: 1MiB is too small (accepted: at least 16MiB"},
		{"max_memory: lots", `"lots" is not a size (accepted: 1048576, 64KiB`},
		{"max_cpu_seconds: -5", "verbs.proc.max_cpu_seconds: -5 is negative (accepted: 0 for the call's timeout"},
		{"keep_output: 5m", "verbs.proc.keep_output: 5m0s is too short (accepted: at least verbs.proc.max_timeout, 10m0s"},
		{"user: 'bad user'", `verbs.proc.user: "bad user" is not a user (accepted: a user name such as nobody, a uid such as 65534, uid:gid such as 1000:1000, or root)`},
		{"user: '1000:'", `verbs.proc.user: "1000:" is not a user`},
		{"user: nobody:nogroup", `verbs.proc.user: "nobody:nogroup" is not a user`},
	} {
		os.WriteFile(p, []byte("verbs:\n  proc:\n    "+tc.yaml+"\n"), 0o600)
		if _, err := LoadWith(p, env(nil)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.yaml, err, tc.want)
		}
	}
}
