package mcp

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// ResultText maps a tools/call result onto the text of a role=tool message:
//
//   - a text block is its text;
//   - an image or audio block is a line "[image image/png, 1234 bytes]": the
//     data is not sent, since tool messages are text;
//   - an embedded text resource is "[resource URI (MIME)]" then its text; an
//     embedded blob is "[resource URI (MIME), N bytes]";
//   - a resource link is "[resource_link NAME URI (MIME): DESCRIPTION]";
//   - with no content blocks, the structured content as JSON.
//
// Blocks are separated by a blank line. A result with one text block is
// exactly that text.
func ResultText(res *mcpgo.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		parts = append(parts, contentText(c))
	}
	if len(parts) == 0 {
		switch {
		case len(res.RawStructuredContent) > 0:
			return string(res.RawStructuredContent)
		case res.StructuredContent != nil:
			b, _ := json.Marshal(res.StructuredContent)
			return string(b)
		}
	}
	return strings.Join(parts, "\n\n")
}

func contentText(c mcpgo.Content) string {
	switch c := c.(type) {
	case mcpgo.TextContent:
		return c.Text
	case *mcpgo.TextContent:
		return c.Text
	case mcpgo.ImageContent:
		return fmt.Sprintf("[image %s, %d bytes]", c.MIMEType, decodedLen(c.Data))
	case *mcpgo.ImageContent:
		return fmt.Sprintf("[image %s, %d bytes]", c.MIMEType, decodedLen(c.Data))
	case mcpgo.AudioContent:
		return fmt.Sprintf("[audio %s, %d bytes]", c.MIMEType, decodedLen(c.Data))
	case *mcpgo.AudioContent:
		return fmt.Sprintf("[audio %s, %d bytes]", c.MIMEType, decodedLen(c.Data))
	case mcpgo.ResourceLink:
		return resourceLinkText(c)
	case *mcpgo.ResourceLink:
		return resourceLinkText(*c)
	case mcpgo.EmbeddedResource:
		return resourceText(c.Resource)
	case *mcpgo.EmbeddedResource:
		return resourceText(c.Resource)
	}
	b, _ := json.Marshal(c)
	return string(b)
}

func resourceLinkText(l mcpgo.ResourceLink) string {
	s := "[resource_link " + l.Name + " " + l.URI
	if l.MIMEType != "" {
		s += " (" + l.MIMEType + ")"
	}
	if l.Description != "" {
		s += ": " + l.Description
	}
	return s + "]"
}

func resourceText(r mcpgo.ResourceContents) string {
	switch r := r.(type) {
	case mcpgo.TextResourceContents:
		return "[resource " + r.URI + mimeSuffix(r.MIMEType) + "]\n" + r.Text
	case *mcpgo.TextResourceContents:
		return "[resource " + r.URI + mimeSuffix(r.MIMEType) + "]\n" + r.Text
	case mcpgo.BlobResourceContents:
		return fmt.Sprintf("[resource %s%s, %d bytes]", r.URI, mimeSuffix(r.MIMEType), decodedLen(r.Blob))
	case *mcpgo.BlobResourceContents:
		return fmt.Sprintf("[resource %s%s, %d bytes]", r.URI, mimeSuffix(r.MIMEType), decodedLen(r.Blob))
	}
	b, _ := json.Marshal(r)
	return "[resource] " + string(b)
}

func mimeSuffix(mime string) string {
	if mime == "" {
		return ""
	}
	return " (" + mime + ")"
}

func decodedLen(b64 string) int {
	if n, err := base64.StdEncoding.DecodeString(b64); err == nil {
		return len(n)
	}
	return base64.StdEncoding.DecodedLen(len(b64))
}
