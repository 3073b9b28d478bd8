// Package imageinput turns the images of a user input into what the
// model takes: an "image" input's URL as given (http, https or data:), a
// "localImage" read from disk into a data: URL, and turn/start's quick
// check of them before anything changes.
//
// It reads the files it is given and nothing else; it knows no thread.
// Its errors wrap protocol.ErrInvalidParams and name the input.
package imageinput
