// Names the extension gives to parts of the generated wire types
// (./protocol, generated from the schemas: do not edit that file), and the
// fields apserver adds to Codex's own messages, which Codex's schema does
// not have (docs/protocol.md). Everything else comes from ./protocol.

import type {
  CommandExecutionApprovalDecision,
  FileChangeApprovalDecision,
  RunStage,
  RunTaskApproveParams,
  ThreadRevertParams,
  ThreadRevertResponse,
  ThreadStartParams,
} from "./protocol";

/** A decision that answers a command approval and a file-change approval alike. */
export type ApprovalDecision = CommandExecutionApprovalDecision & FileChangeApprovalDecision;

/** run/task/approve's decision. */
export type TaskDecision = NonNullable<RunTaskApproveParams["decision"]>;

/** The settings a new or resumed thread takes from the extension's configuration. */
export type ThreadSettings = Pick<ThreadStartParams, "cwd" | "model" | "approvalPolicy" | "sandbox">;

/** thread/revert as apserver answers it: `force` restores over files changed outside apserver. */
export interface ApserverThreadRevert {
  params: ThreadRevertParams & { force?: boolean };
  result: ThreadRevertResponse & { restoredPaths?: string[] };
}

/** A run's stages in order. */
export const RUN_STAGES: readonly RunStage[] = ["planning", "planApproval", "implementation", "validation", "merge", "done"];
