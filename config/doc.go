// Package config loads the hub's YAML configuration strictly: ${VAR} and
// ${VAR:-default} are expanded from the environment inside values, every key
// and value is checked against the Go type it decodes into (an unknown key
// is an error that suggests the nearest accepted one, a value of the wrong
// kind says what is accepted), defaults are applied and every value is
// validated at start-up. Each problem is an *Error naming the file, the line
// and the key path. No file at all is a valid configuration: the web panel
// on loopback, the working directory as workspace, ./.hub as state.
//
// Each section (web, telegram, …) is a file of its own holding its type, its
// defaults (applyDefaults) and its checks (validate); Config.sections lists
// them. docs/configuration.md says how to add a key.
package config
