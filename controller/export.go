package controller

// RuleInterrupted is the rule id of a decision on an interrupted turn; the
// full-auto state machine carries it out differently for a goal.
const RuleInterrupted = ruleInterrupted

// CommandPrefix is the first two words of a command: the unit Approve
// counts human denials in.
func CommandPrefix(cmd string) string { return commandPrefix(cmd) }
