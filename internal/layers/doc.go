// Package layers holds the one test of the repository's layering
// (docs/architecture.md, "Packages and import direction"): it reads every
// package's imports with go list and fails when an import points up, when
// a pure package (a decision core, the thread port) reaches beyond
// protocol and the standard library, or when a layer above threads
// reaches session other than through its port (session/port). It has no
// code of its own.
package layers
