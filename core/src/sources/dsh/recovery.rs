//! Cold-load crash recovery: the synthetic events DSH appends when a log
//! ends inside an unfinished turn.
//!
//! When the kept events end inside an open turn, a cold load closes it:
//! first a `tool/result` for every tool call of the turn left without one,
//! then `step/end` if a step is open, then `turn/end` with reason
//! `interrupted`. Which calls are open depends on the generation: up to v3
//! (as DSH 0.1.1 reads v0) a call is open from its `tool/call` event; in v4
//! (as DSH ≥ 0.1.7 repairs) every `tool-call` block an assistant message
//! advertised is open, each occurrence separately, whether or not it was
//! started, until a `tool/result` answers it. The closers take the seqs after the last stored event.
//! They are never surface events here and are never projected (tool
//! results are not), but they do count in `capturedThroughSeq`.

use serde::Deserialize;

use super::generation::Generation;

/// One synthetic closer event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Closer {
    /// A result for the open tool call with this id.
    ToolResult(String),
    /// `step/end` of the open step.
    StepEnd,
    /// `turn/end` with reason `interrupted`.
    TurnEnd,
}

impl Closer {
    /// The event type of the closer.
    pub fn event_type(&self) -> &'static str {
        match self {
            Closer::ToolResult(_) => "tool/result",
            Closer::StepEnd => "step/end",
            Closer::TurnEnd => "turn/end",
        }
    }
}

/// Tracks the open turn, step and tool calls while a log is read.
#[derive(Clone, Debug, Default)]
pub struct TurnTracker {
    turn_open: bool,
    step_open: bool,
    open_calls: Vec<String>,
    /// v4: calls open when advertised, not when started.
    advertised: bool,
}

impl TurnTracker {
    /// A tracker with nothing open (calls open from `tool/call`).
    pub fn new() -> Self {
        TurnTracker::default()
    }

    /// A tracker for a log of `generation`.
    pub fn for_generation(generation: Generation) -> Self {
        TurnTracker { advertised: generation >= Generation::V4, ..TurnTracker::default() }
    }

    /// About how many bytes the ids of the open calls hold.
    pub(crate) fn open_call_bytes(&self) -> usize {
        self.open_calls.iter().map(|c| c.capacity() + std::mem::size_of::<String>()).sum()
    }

    /// Whether [`observe_advertised`](Self::observe_advertised) must be fed.
    pub fn tracks_advertised_calls(&self) -> bool {
        self.advertised
    }

    /// Observes the `tool-call` block ids of an assistant message (v4 only).
    pub fn observe_advertised(&mut self, ids: &[String]) {
        if self.advertised && self.turn_open {
            self.open_calls.extend(ids.iter().cloned());
        }
    }

    /// Observes one stored event of type `kind` (its line is read only for
    /// tool calls and results).
    pub fn observe(&mut self, kind: &str, line: &[u8]) {
        match kind {
            "turn/start" => {
                self.turn_open = true;
                self.step_open = false;
                self.open_calls.clear();
            }
            "turn/end" => {
                self.turn_open = false;
                self.step_open = false;
                self.open_calls.clear();
            }
            "step/start" => self.step_open = true,
            "step/end" => self.step_open = false,
            "tool/call" if !self.advertised => {
                if let Some(id) = tool_call_id(line) {
                    self.open_calls.push(id);
                }
            }
            // A result can only close a call that is open: with none open
            // the (often large) line is not read at all.
            "tool/result" if !self.open_calls.is_empty() => {
                if let Some(id) = tool_result_call_id(line) {
                    if self.advertised {
                        // One result answers one advertised occurrence.
                        if let Some(at) = self.open_calls.iter().position(|c| *c == id) {
                            self.open_calls.remove(at);
                        }
                    } else {
                        self.open_calls.retain(|c| *c != id);
                    }
                }
            }
            _ => {}
        }
    }

    /// The closers a cold load appends, in order (empty when no turn is open).
    pub fn closers(&self) -> Vec<Closer> {
        if !self.turn_open {
            return Vec::new();
        }
        let mut out: Vec<Closer> = self.open_calls.iter().cloned().map(Closer::ToolResult).collect();
        if self.step_open {
            out.push(Closer::StepEnd);
        }
        out.push(Closer::TurnEnd);
        out
    }
}

/// The `callId` of a `tool/call` event (`data.callId`), if readable.
pub fn tool_call_id(line: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct Line {
        data: CallData,
    }
    #[derive(Deserialize)]
    struct CallData {
        #[serde(rename = "callId")]
        call_id: String,
    }
    serde_json::from_slice::<Line>(line).ok().map(|l| l.data.call_id)
}

/// The call id a `tool/result` event answers (`data.message.source.callId`),
/// if readable.
pub fn tool_result_call_id(line: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct Line {
        data: ResultData,
    }
    #[derive(Deserialize)]
    struct ResultData {
        message: Message,
    }
    #[derive(Deserialize)]
    struct Message {
        source: Source,
    }
    #[derive(Deserialize)]
    struct Source {
        #[serde(rename = "callId")]
        call_id: String,
    }
    serde_json::from_slice::<Line>(line).ok().map(|l| l.data.message.source.call_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closes_an_open_turn() {
        let mut t = TurnTracker::new();
        assert!(t.closers().is_empty());
        t.observe("turn/start", b"{}");
        t.observe("step/start", b"{}");
        assert_eq!(t.closers(), vec![Closer::StepEnd, Closer::TurnEnd]);
        t.observe("tool/call", br#"{"type":"tool/call","data":{"callId":"a"}}"#);
        t.observe("tool/call", br#"{"type":"tool/call","data":{"callId":"b"}}"#);
        t.observe("tool/result", br#"{"type":"tool/result","data":{"message":{"source":{"callId":"a"}}}}"#);
        assert_eq!(t.closers(), vec![Closer::ToolResult("b".into()), Closer::StepEnd, Closer::TurnEnd]);
        t.observe("step/end", b"{}");
        t.observe("turn/end", b"{}");
        assert!(t.closers().is_empty());
    }

    #[test]
    fn v4_closes_every_advertised_occurrence() {
        let mut t = TurnTracker::for_generation(Generation::V4);
        t.observe("turn/start", b"{}");
        t.observe("step/start", b"{}");
        t.observe_advertised(&["a".into(), "b".into(), "a".into()]);
        // Started or not, an advertised call is open until answered.
        t.observe("tool/call", br#"{"type":"tool/call","data":{"callId":"a"}}"#);
        t.observe("tool/result", br#"{"type":"tool/result","data":{"message":{"source":{"callId":"a"}}}}"#);
        assert_eq!(
            t.closers(),
            vec![Closer::ToolResult("b".into()), Closer::ToolResult("a".into()), Closer::StepEnd, Closer::TurnEnd]
        );
        // Before v4, advertising opens nothing.
        let mut t = TurnTracker::for_generation(Generation::new(3).unwrap());
        t.observe("turn/start", b"{}");
        t.observe_advertised(&["a".into()]);
        assert_eq!(t.closers(), vec![Closer::TurnEnd]);
    }

    #[test]
    fn call_ids() {
        assert_eq!(tool_call_id(br#"{"type":"tool/call","data":{"callId":"c1"}}"#).as_deref(), Some("c1"));
        let result = br#"{"type":"tool/result","data":{"message":{"source":{"kind":"tool","callId":"c1"}}}}"#;
        assert_eq!(tool_result_call_id(result).as_deref(), Some("c1"));
    }
}
