package skills_test

import (
	"fmt"

	"github.com/nagent/nagent/skills"
)

func ExampleParse() {
	s, err := skills.Parse("greet/SKILL.md", "greet", []byte(`---
name: greet
description: Greet people warmly. Use when someone says hello.
tags: [social]
---
Say hello back, using their name.
`))
	fmt.Println(s.Name, s.Tags, err)
	fmt.Print(s.Body)

	_, err = skills.Parse("bad/SKILL.md", "bad", []byte("---\nname: bad\n---\n"))
	fmt.Println(err)
	// Output:
	// greet [social] <nil>
	// Say hello back, using their name.
	// bad/SKILL.md: field description: is required: say what the skill does and when to use it
}
