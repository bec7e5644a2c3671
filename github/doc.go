// Package github talks to GitHub as a GitHub App on podbot's behalf.
//
// It loads the App's RSA private key with checks that name the bad file and
// say how to fix it (LoadPrivateKey), validates the App against the REST API
// (App.ValidateApp, App.CheckInstallation), and mints installation access
// tokens while keeping the expiry GitHub reports (App.InstallationToken).
// GitHub Enterprise Server is supported through AppConfig.APIURL.
//
// Every failure is an *errdefs.GitHubError. Token values never appear in
// errors, in fmt output of a Token, or in slog records. The package writes
// no files; the token daemon owns the token file.
package github
