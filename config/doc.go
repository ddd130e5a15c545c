// Package config loads the hub's YAML configuration strictly: unknown keys
// are errors with line numbers, ${VAR} and ${VAR:-default} are expanded from
// the environment inside values, defaults are applied and every value is
// validated at start-up with messages that name the key. No file at all is a
// valid configuration: the web panel on loopback, the working directory as
// workspace, ./.hub as state.
package config
