package config

// ProjectTrusted reports whether the user trusts the project at path. Stub until the trust key lands.
func (c Config) ProjectTrusted(path string) bool { return false }
