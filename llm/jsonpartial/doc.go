// Package jsonpartial parses the JSON text of tool-call arguments while a
// model is still streaming it.
//
// Parse is tolerant: given any prefix of a JSON document it returns the
// longest valid JSON value that prefix implies, closing open strings, arrays
// and objects and dropping a member whose key or value has not arrived yet.
// It never fails: input that is not a prefix of JSON yields "{}". Wire
// packages call it after each argument fragment so Partial content always
// holds a usable object for live displays.
//
// Strict is for the end of a tool-call block: the whole text must be one
// JSON object (empty text means {}).
//
// ObjectEnd watches the fragments as they arrive and reports the moment
// they hold one whole object (its closing brace read, nothing but
// whitespace after), in linear time overall, so a wire package can end a
// call's block, and the call can start, without waiting for the stream to
// move on.
//
// The convention for a call whose final arguments are not a JSON object:
// the wire package sets the block's Arguments to Invalid(raw), a JSON
// *string* holding the raw text the model sent. A string is never a valid
// argument object, so the tool registry answers the call with an error
// result (and quotes the text back to the model) instead of executing it;
// anyone inspecting the transcript can still see what was sent. IsInvalid
// recognises such arguments.
//
// This room imports only the standard library.
package jsonpartial
