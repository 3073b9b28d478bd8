// Package clientinfo implements what a Codex client such as the TUI asks
// at start-up that is about no thread: account/read,
// configRequirements/read, skills/list (the SKILL.md files it finds),
// hooks/list, collaborationMode/list, the Bedrock GovCloud check and
// plugin/installed. It owns nothing; the thread lists (thread/loaded/list,
// thread/turns/list, ...) stay in session. It must not import session.
package clientinfo
