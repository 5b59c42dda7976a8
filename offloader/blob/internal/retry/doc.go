// Package retry is the one retry loop and backoff the blob providers share
// (the S3 provider uses the SDK's equivalent).
package retry
