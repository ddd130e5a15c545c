package config

import (
	"strings"
	"testing"
)

// commandsYAML is a commands section with a parameter of each type, and a
// schedule that runs one of them.
const commandsYAML = `access:
  roles:
    ops: {verbs: [cmd.deploy]}
  grants:
    schedule:nightly: [ops]
commands:
  deploy:
    description: Deploy a tag to an environment
    params:
      env: {type: enum, values: [staging, production]}
      tag: {type: string, pattern: 'v[0-9]+(\.[0-9]+)*'}
      file: {type: path, description: the manifest}
      replicas: {type: integer, min: 1, max: 9}
    timeout: 5m
    run:
      verb: proc.run
      arguments:
        executable: ./scripts/deploy.sh
        arguments: [--env, "{env}", "{tag}", "{file}"]
        timeoutSeconds: "{replicas}"
schedules:
  nightly:
    cron: "0 6 * * *"
    run: {command: deploy, params: {env: staging, tag: v1, file: deploy.yml, replicas: 2}}
`

// TestCommandsLoadAndCall: a command keeps its parameters in the order
// written, and its call is the fixed envelope with each value in its
// place, typed (an integer as a number); a schedule may run it.
func TestCommandsLoadAndCall(t *testing.T) {
	cfg := &Config{}
	if err := Parse([]byte(commandsYAML), env(nil), cfg); err != nil {
		t.Fatal(err)
	}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	cmd := cfg.Commands["deploy"]
	if strings.Join(cmd.Params.Names, ",") != "env,tag,file,replicas" || cmd.Timeout.D().Minutes() != 5 {
		t.Fatalf("command %+v", cmd)
	}
	verb, args, err := cmd.Call([]byte(`{"env":"production","tag":"v2.1","file":"m/deploy.yml","replicas":3}`))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"arguments":["--env","production","v2.1","m/deploy.yml"],"executable":"./scripts/deploy.sh","timeoutSeconds":3}`
	if verb != "proc.run" || string(args) != want {
		t.Fatalf("call %s %s, want proc.run %s", verb, args, want)
	}
}

// TestCommandsErrors pins what each wrong command is told.
func TestCommandsErrors(t *testing.T) {
	const head = "commands:\n  deploy:\n"
	run := "    run: {verb: proc.run, arguments: {executable: ./d.sh, arguments: [\"{env}\"]}}\n"
	for _, tc := range []struct {
		name, yml, want string
	}{
		{"name", "commands:\n  Deploy-It:\n    run: {verb: sys.machineInfo}\n",
			`line 2: commands: "Deploy-It" is not a command name (accepted: 1 to 32 lower-case letters and digits, starting with a letter)`},
		{"string without a pattern", head + "    params: {env: {type: string}}\n" + run,
			`line 3: commands.deploy.params.env: a string parameter needs a pattern`},
		{"pattern", head + "    params: {env: {type: string, pattern: '[a-'}}\n" + run,
			`line 3: commands.deploy.params.env: pattern "[a-" is not an RE2 expression`},
		{"type", head + "    params: {env: {type: shell}}\n" + run,
			`line 3: commands.deploy.params.env: type "shell" is not a parameter type (accepted: string, enum, integer, path)`},
		{"enum without values", head + "    params: {env: {type: enum}}\n" + run,
			`line 3: commands.deploy.params.env: an enum parameter needs values`},
		{"enum value twice", head + "    params: {env: {type: enum, values: [a, a]}}\n" + run,
			`line 3: commands.deploy.params.env: value "a" is empty, repeated or not plain text`},
		{"range", head + "    params: {env: {type: integer, min: 5, max: 1}}\n" + run,
			`line 3: commands.deploy.params.env: min 5 is above max 1`},
		{"a key of another type", head + "    params: {env: {type: path, values: [a]}}\n" + run,
			`line 3: commands.deploy.params.env: pattern is for type string, values for enum, min and max for integer`},
		{"placeholder inside a string", head + "    params: {env: {type: path}}\n    run: {verb: proc.run, arguments: {executable: sh, arguments: [-c, \"deploy {env}\"]}}\n",
			`line 4: commands.deploy.run.arguments: arguments[1]: "deploy {env}" has a placeholder inside a longer string; a parameter is substituted only as a whole value`},
		{"placeholder of no parameter", head + "    params: {env: {type: path}}\n    run: {verb: proc.run, arguments: {executable: \"{exe}\", arguments: [\"{env}\"]}}\n",
			`line 4: commands.deploy.run.arguments: executable: "{exe}" names no parameter (accepted: env)`},
		{"placeholder as a key", head + "    params: {env: {type: path}}\n    run: {verb: proc.run, arguments: {executable: x, env: {\"{env}\": a}}}\n",
			`line 4: commands.deploy.run.arguments: env.{env}: a placeholder may not be a key`},
		{"parameter not used", head + "    params: {env: {type: path}, other: {type: path}}\n" + run,
			`line 4: commands.deploy.run.arguments: parameter other is not used: write "{other}" as the value it fills`},
		{"no verb", head + "    run: {arguments: {}}\n",
			`line 3: commands.deploy.run.verb is empty`},
		{"a command's verb", head + "    run: {verb: cmd.other}\n",
			`line 3: commands.deploy.run.verb: cmd.other is a named command`},
		{"workspace", head + "    workspace: nowhere\n    run: {verb: sys.machineInfo}\n",
			`line 3: commands.deploy.workspace: workspace "nowhere" is not configured (accepted: default)`},
		{"schedule params refused", strings.Replace(commandsYAML, "replicas: 2}", "replicas: 20}", 1),
			`line 24: schedules.nightly.run.params: parameter "replicas": 20 is out of range (accepted: an integer from 1 to 9)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			refusedWith(t, tc.yml, tc.want)
		})
	}
}
