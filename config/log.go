package config

// Log configures logging.
type Log struct {
	Level  string `yaml:"level"`  // debug, info, warn, error
	Format string `yaml:"format"` // text or json
}

func (l *Log) applyDefaults(*Config) {
	setDefault(&l.Level, "info")
	setDefault(&l.Format, "text")
}

func (l *Log) validate(_ *Config, v *validator) {
	v.oneOf("log.level", l.Level, "debug", "info", "warn", "error")
	v.oneOf("log.format", l.Format, "text", "json")
}
