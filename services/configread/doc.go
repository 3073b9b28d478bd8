// Package configread implements config/read: the settings new threads
// get, in Codex's keys, with the layer (user file, workspace file, flags
// and environment) that set each. It reads the config files itself and
// owns nothing; it must not import session.
package configread
