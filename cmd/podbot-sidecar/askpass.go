package main

import (
	"fmt"
	"io"

	"github.com/podbot/podbot/gitcred"
)

// askpass answers git's credential prompt: the user name or the token from
// tokenPath, only for the origin in originPath. Without a readable origin
// file nothing is answered.
func askpass(prompt, originPath, tokenPath string, stdout io.Writer) error {
	origin, err := gitcred.ReadOrigin(originPath)
	if err != nil {
		return fmt.Errorf("git gets no GitHub token without the clone origin podbot writes: %w", err)
	}
	answer, err := gitcred.Answer(origin, prompt, func() (string, error) { return gitcred.ReadToken(tokenPath) })
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, answer)
	return err
}
