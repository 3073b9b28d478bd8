// Package paramcheck holds the checks of request params that decoding
// cannot make because they need the configuration or the file system:
// thread/start's (resume's, fork's) overrides and turn/start's cwd,
// model, effort, summary, images and outputSchema. server/ runs them
// (through session.Manager) before the methods, on the read loop — they
// only stat a path — so a refused request changes nothing. Each error
// wraps protocol.ErrInvalidParams and names the field.
//
// It knows no thread: the configuration comes in as a value.
package paramcheck
