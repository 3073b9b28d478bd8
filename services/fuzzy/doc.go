// Package fuzzy implements fuzzyFileSearch (the @-mention picker): the
// files under some roots whose path matches a query, best first, and the
// cancellation tokens that let a newer search end an older one. It owns
// nothing but those tokens; it must not import session.
package fuzzy
