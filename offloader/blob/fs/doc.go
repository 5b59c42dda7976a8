// Package fs is a blob store in a local directory: the embedded default for
// demos and tests. It implements blob.Store and blob.MultipartLister and
// passes the blobtest acceptance suite.
//
// # Layout
//
//	<dir>/objects/<name>      one JSON record per object (the sidecar): key,
//	                          size, ETag, modification time, content type,
//	                          user metadata, and the data file it points to
//	<dir>/data/<gen>          object bytes; <gen> is 32 random hex digits
//	<dir>/uploads/<id>/upload.json    an incomplete multipart upload
//	<dir>/uploads/<id>/part-00001     its parts (one file each)
//	<dir>/tmp/                temporary files, renamed into place
//
// <name> is the key with '%' and '/' percent-encoded, so keys such as "a"
// and "a/b" coexist and `ls objects/` shows the keys; a key whose encoded
// form is longer than 200 bytes is stored under "%h" + hex(SHA-256(key)).
//
// # Atomicity and crash safety
//
// Every file is written to tmp/, fsynced and renamed into place, and the
// directory fsynced. A write stores the data file first and then renames
// the record over the old one: the record rename is the commit point, so a
// reader sees the old object or the new one, never a mix, and a crash at any
// point leaves the old object or the new one. A crash between the two
// renames can leave an unreferenced data file; Sweep removes those and stale
// temporary files. Part files are renamed into the upload directory; a
// part that was not fully written never appears.
//
// # Caveats
//
// One process per directory is assumed for writes to the same key
// (concurrent writers in one process are serialised per key). Directory
// listing cost is linear in the number of objects.
package fs
