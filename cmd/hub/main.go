// Command hub is Hermes Hub: a self-hosted chat-ops hub that runs verbs on
// this machine for Telegram, Discord, the web panel and agents.
//
// Usage: hub <command> [flags]; run `hub help` for the list.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Exit codes shared by every subcommand.
const (
	exitOK     = 0
	exitFailed = 1 // the verb or operation failed
	exitUsage  = 2 // bad flags or arguments
)

// usageError marks errors that are the caller's, reported with exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// exitError carries a specific exit code without printing anything more.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

type command struct {
	name    string
	summary string
	run     func(env *cliEnv, args []string) error
}

// cliEnv is what a subcommand may touch: its streams and the environment.
type cliEnv struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

func commands() []command {
	return []command{
		{"serve", "run the hub: web panel, platform adapters, outbox", runServe},
		{"exec", "run one verb envelope, or many with --interactive / --stdio", runExec},
		{"mcp", "serve the verbs as MCP tools over stdio (for agents)", runMCP},
		{"verbs", "list the verbs", runVerbs},
		{"schema", "print the argument and result types of a verb (or all)", runSchema},
		{"send", "deliver text to every delivery target", runSend},
		{"targets", "list, add, remove or clear delivery targets", runTargets},
		{"channels", "list or rebuild the channel directory", runChannels},
		{"outbox", "inspect the outbox: list, dead, show, retry, purge", runOutbox},
		{"mirror", "show or search chat mirror records, or prune old runs", runMirror},
		{"schedules", "list the schedules, or run one now", runSchedules},
		{"access", "approve pairing codes, list and revoke grants", runAccess},
		{"reload", "make the running hub read its configuration again", runReload},
		{"workspaces", "list, show or reset the named workspaces and their destinations", runWorkspaces},
		{"backup", "write the state into one archive, while the hub runs or not", runBackup},
		{"restore", "restore a backup into an empty state directory", runRestore},
		{"doctor", "check configuration, state, workspace and tokens", runDoctor},
		{"discord", "Discord helpers: `hub discord commands` prints the slash commands", runDiscord},
		{"node", "run this machine as a remote node of a hub (`hub node init` makes its key)", runNode},
		{"nodes", "list the remote nodes and whether they are online", runNodes},
		{"nats", "print the NATS servers' configuration for the hub and its nodes (nats.url)", runNATS},
		{"version", "print the version", runVersion},
	}
}

func main() {
	bootstrap()
	env := &cliEnv{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}
	os.Exit(run(env, os.Args[1:]))
}

func run(env *cliEnv, args []string) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) > 1 {
			return run(env, []string{args[1], "--help"})
		}
		printUsage(env.stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return report(env, c.name, c.run(env, args[1:]))
		}
	}
	fmt.Fprintf(env.stderr, "hub: unknown command %q\n\n", args[0])
	printUsage(env.stderr)
	return exitUsage
}

func report(env *cliEnv, name string, err error) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(env.stderr, "hub %s: %s\n", name, ue.msg)
		return exitUsage
	}
	if errors.Is(err, errHelp) {
		return exitOK
	}
	fmt.Fprintf(env.stderr, "hub %s: %v\n", name, err)
	return exitFailed
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "Hermes Hub: run verbs on this machine from Telegram, Discord, the web panel or an agent.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: hub <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	cmds := commands()
	width := 0
	for _, c := range cmds {
		width = max(width, len(c.name))
	}
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run `hub <command> --help` for a command's flags.")
}
