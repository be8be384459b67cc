package api

import (
	"slices"
	"testing"

	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/guardrails"
)

// PlanAdmission sorts waiting tools as admission treats them: pending ones
// approved unless held back, flagged (a high-severity finding) or blocked,
// changed ones kept for review, the rest (approved, blocked, absent) left
// out.
func TestPlanAdmission(t *testing.T) {
	tool := func(name string, st approval.Status, present, heldBack bool) Tool {
		return Tool{Name: name, Status: st, Present: present, HeldBack: heldBack}
	}
	tools := []Tool{
		tool("p1", approval.StatusPending, true, false),
		tool("held", approval.StatusPending, true, true),
		tool("changed", approval.StatusChanged, true, false),
		tool("ok", approval.StatusApproved, true, false),
		tool("blocked", approval.StatusBlocked, true, false),
		tool("gone", approval.StatusPending, false, false),
		tool("p2", approval.StatusPending, true, false),
		tool("to-block", approval.StatusPending, true, false),
		tool("changed-to-block", approval.StatusChanged, true, false),
		tool("flagged", approval.StatusPending, true, false),
		tool("medium", approval.StatusPending, true, false),
	}
	tools[9].Findings = []guardrails.Finding{{Rule: guardrails.RuleCredentials, Severity: guardrails.High}}
	tools[10].Findings = []guardrails.Finding{{Rule: guardrails.RuleMarkup, Severity: guardrails.Medium}}
	names := func(ts []Tool) []string {
		var out []string
		for _, t := range ts {
			out = append(out, t.Name)
		}
		return out
	}
	plan := PlanAdmission(tools, []string{"to-block", "changed-to-block"})
	if got := names(plan.Approve); !slices.Equal(got, []string{"p1", "p2", "medium"}) {
		t.Errorf("approve %v, want [p1 p2 medium]", got)
	}
	if got := names(plan.Flagged); !slices.Equal(got, []string{"flagged"}) {
		t.Errorf("flagged %v, want [flagged]", got)
	}
	if got := names(plan.HeldBack); !slices.Equal(got, []string{"held"}) {
		t.Errorf("held back %v, want [held]", got)
	}
	if got := names(plan.Changed); !slices.Equal(got, []string{"changed"}) {
		t.Errorf("changed %v, want [changed]", got)
	}
	for _, tt := range []struct {
		tool Tool
		want bool
	}{{tools[0], true}, {tools[2], true}, {tools[3], false}, {tools[4], false}, {tools[5], false}} {
		if got := Waiting(tt.tool); got != tt.want {
			t.Errorf("Waiting(%s) = %v, want %v", tt.tool.Name, got, tt.want)
		}
	}
}
