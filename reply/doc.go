// Package reply turns a model's streamed reply into what people and chat
// channels should see. Every piece is a pure function or a small type,
// usable without the runner:
//
//   - Stripper and StripTags remove reasoning (<think>, <thinking>,
//     <thought>, <antthinking> blocks) and <final> tags, across chunk
//     boundaries and never inside code; with EnforceFinal only text inside
//     <final> is delivered.
//   - Chunker cuts a growing reply into blocks between a minimum and a
//     maximum size, preferring paragraph, then line, then sentence breaks,
//     and never splits a code fence without closing it and reopening it in
//     the next block. It never drops a block because it equals the
//     previous one.
//   - ParseDirectives, DirectiveStream, SplitMedia and the silent-token
//     helpers read reply directives ([[reply_to_current]],
//     [[reply_to:<id>]], [[audio_as_voice]]), MEDIA: lines (rejecting ..
//     and ~ paths) and the silent token NO_REPLY.
//   - SentTexts and IsMessagingDuplicate suppress a block that repeats what
//     a messaging tool already sent.
//   - Pipeline chains them for one assistant message at a time.
//
// The behaviour follows OpenClaw's reply pipeline (the reference, §9).
// Where we deliberately differ:
//
//   - a block equal to the previous block is delivered, not dropped (a long
//     run of identical lines in a code block is content);
//   - a block that must be cut inside a code fence is cut at the last line
//     end that fits, not mid-line at MaxChars, so code lines stay whole;
//   - at the end of a reply the rest is sent whole when it fits in one
//     block, instead of being split again at its first break;
//   - sizes are in bytes, not UTF-16 units, and a cut never splits a UTF-8
//     sequence;
//   - the streaming stripper accepts what the one-shot one accepts
//     (name="value" attributes, the antml: prefix), holds back a tag split
//     across chunks instead of letting it through, and treats an inline
//     code span as closed only by a backtick run on the same line;
//   - removing a MEDIA: line does not collapse the other blank lines of the
//     reply (only runs of more than one blank line become one).
//
// reply imports only the standard library.
package reply
