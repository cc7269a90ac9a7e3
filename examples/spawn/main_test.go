package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestChildInheritsResourceMemory(t *testing.T) {
	var out bytes.Buffer
	if err := run(t.Context(), &out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	child, parent, ok := strings.Cut(s, "--- the parent's system prompt afterwards ---")
	if !ok {
		t.Fatalf("output:\n%s", s)
	}
	if !strings.Contains(s, "assistant: Sent: Bonjour Lea, bienvenue dans l'offre Pro !") {
		t.Errorf("the child did not use the inherited profile:\n%s", s)
	}
	_, childPrompt, _ := strings.Cut(child, "--- the child's system prompt ---")
	if !strings.Contains(childPrompt, `"language": "French"`) || !strings.Contains(childPrompt, "scope root/child: plan=pro") {
		t.Errorf("child prompt should hold the profile and a child scope of the facts:\n%s", childPrompt)
	}
	if strings.Contains(childPrompt, "spawn_agent") || !strings.Contains(childPrompt, "profile_update") {
		t.Errorf("child tools wrong:\n%s", childPrompt)
	}
	if strings.Contains(parent, "lastMessage") || !strings.Contains(parent, "scope root: plan=pro") || !strings.Contains(parent, `"name": "Lea"`) {
		t.Errorf("the parent's memory afterwards:\n%s", parent)
	}
}
