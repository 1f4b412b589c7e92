package cryptopay

import "runtime"

// Version is the SDK's version, sent in the User-Agent header.
const Version = "0.1.0"

// sdkUserAgent is the SDK's own User-Agent token, sent on every request
// (after the caller's, given with WithHeader).
var sdkUserAgent = "cryptopay-go/" + Version + " (" + runtime.Version() + "; " + runtime.GOOS + "/" + runtime.GOARCH + ")"
