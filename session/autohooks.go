package session

// Full auto plugs into the agent loop at these points, all on the thread
// goroutine unless noted, each feeding the thread's fullauto.Machine an
// event through its autodrive.Drive, which applies the effects:
//
//   - runTurnInput (fullauto.go), right after turn/started: TurnStarted,
//     and a run's hidden input or carried-over items;
//   - responseUsage (fullauto_turn.go), after each model response;
//   - turnEnded (fullauto_turn.go), after turn/completed;
//   - autoAnswer, answerLater, requestWait and settleRequest (on the wait
//     goroutine) (fullauto_approve.go), the approval ladder around
//     sendRequest.
