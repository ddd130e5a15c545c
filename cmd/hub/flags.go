package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/a6afc2ce/hermes-hub/config"
)

var errHelp = errors.New("help shown")

// flagSet is a flag.FlagSet that accepts flags before, after and between
// positional arguments (`hub exec '{…}' -o out.json`), and reports errors
// as usage errors.
type flagSet struct {
	*flag.FlagSet
	usage string
	out   io.Writer
}

func newFlags(env *cliEnv, name, usage string) *flagSet {
	fs := flag.NewFlagSet("hub "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return &flagSet{FlagSet: fs, usage: usage, out: env.stdout}
}

// parse returns the positional arguments.
func (f *flagSet) parse(args []string) ([]string, error) {
	var pos []string
	for {
		if err := f.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				f.printHelp()
				return nil, errHelp
			}
			return nil, usagef("%v (see `%s --help`)", err, f.Name())
		}
		rest := f.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if rest[0] == "--" {
			return append(pos, rest[1:]...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func (f *flagSet) printHelp() {
	fmt.Fprintf(f.out, "Usage: %s\n", f.usage)
	var b strings.Builder
	f.SetOutput(&b)
	f.PrintDefaults()
	f.SetOutput(io.Discard)
	if b.Len() > 0 {
		fmt.Fprintf(f.out, "\nFlags:\n%s", b.String())
	}
}

// common flags for commands that need the configuration.
type commonFlags struct {
	config    string
	state     string
	workspace string
	listen    string // web.listen from the command line (hub serve)
}

func (c *commonFlags) register(f *flagSet, withWorkspace bool) {
	f.StringVar(&c.config, "config", "", "configuration file (default: $HUB_CONFIG, else ./hub.yml if present, else built-in defaults)")
	f.StringVar(&c.state, "state", "", "state directory (overrides state_dir; default ./.hub)")
	if withWorkspace {
		f.StringVar(&c.workspace, "workspace", "", "workspace directory (overrides workspace; default the working directory)")
	}
}

// registerListen adds --listen, which moves the web panel whatever the
// configuration and HUB_WEB_LISTEN say.
func (c *commonFlags) registerListen(f *flagSet) {
	f.StringVar(&c.listen, "listen", "", "the web panel's host:port (overrides "+config.ListenEnv+", which overrides web.listen; default 127.0.0.1:8080)")
}
