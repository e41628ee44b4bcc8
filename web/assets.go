package web

import (
	"embed"
	"io/fs"
)

// uiFiles holds the dashboard's single-page app: plain HTML, CSS and ES
// modules, served as they are (no build step).
//
//go:embed ui
var uiFiles embed.FS

// UI returns the embedded dashboard files, rooted at web/ui.
func UI() fs.FS {
	sub, err := fs.Sub(uiFiles, "ui")
	if err != nil {
		panic(err) // the embed pattern guarantees the directory
	}
	return sub
}
