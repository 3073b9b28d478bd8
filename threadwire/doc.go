// Package threadwire renders stored threads as the protocol's wire types:
// a thread row as a Thread, its turns and items as Turns, and — for
// thread/read, thread/resume and thread/fork of a long thread — a
// StreamedResult that the server writes piece by piece, byte for byte
// what encoding the whole result in memory gives.
//
// It reads the store it is given and knows no live thread: session
// supplies the status of a loaded one.
package threadwire
