// Package dynamictools holds what needs no thread of the tools a client
// declares on thread/start (Codex's dynamic tools): the declared list
// flattened to the names the model calls (NAMESPACE__NAME in a
// namespace), its encoding in the thread's settings with the names of
// apserver's own tools refused, read back from the settings and offered
// to the model, and the client's answer read and cut for the item and the
// model. session asks the client and records the item
// (session/dynamictools.go).
package dynamictools
