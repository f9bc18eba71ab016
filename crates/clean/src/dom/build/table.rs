//! The table insertion modes: "in table", "in table text", "in caption",
//! "in column group", "in table body", "in row" and "in cell". Foster
//! parenting (text or elements where the table wants its parts) and a
//! table in a table are given up on.

use html5ever::{LocalName, local_name};

use super::sets::{table_body_context, table_context, table_part, table_row_context, table_section_ends};
use super::{DONE, Did, GiveUp, MARKER, Mode, Scope, State, Step, Tok, attr, is_ws};

impl State {
    pub(super) fn clear_formatting_to_marker(&mut self) {
        while let Some((id, _)) = self.formatting.pop() {
            if id == MARKER {
                break;
            }
        }
    }

    /// Pops elements until the current node is one of `stop`'s.
    pub(super) fn pop_until_current(&mut self, stop: fn(&LocalName) -> bool) {
        while let Some((_, n)) = self.open.last() {
            if stop(n) {
                break;
            }
            self.open.pop();
        }
    }

    /// html5ever's `reset_insertion_mode` (no fragment context; templates,
    /// selects and framesets never open here).
    pub(super) fn reset_mode(&self) -> Step<Mode> {
        for (i, (_, n)) in self.open.iter().enumerate().rev() {
            let last = i == 0;
            match *n {
                local_name!("td") | local_name!("th") if !last => return Ok(Mode::InCell),
                local_name!("tr") => return Ok(Mode::InRow),
                local_name!("tbody") | local_name!("thead") | local_name!("tfoot") => {
                    return Ok(Mode::InTableBody);
                }
                local_name!("caption") => return Ok(Mode::InCaption),
                local_name!("colgroup") => return Ok(Mode::InColumnGroup),
                local_name!("table") => return Ok(Mode::InTable),
                local_name!("head") if !last => return Ok(Mode::InHead),
                local_name!("body") => return Ok(Mode::InBody),
                local_name!("select") | local_name!("template") | local_name!("frameset") => {
                    return Err(GiveUp);
                }
                local_name!("html") => {
                    return Ok(if self.head.is_none() {
                        Mode::BeforeHead
                    } else {
                        Mode::AfterHead
                    });
                }
                _ => {}
            }
        }
        Ok(Mode::InBody)
    }

    pub(super) fn in_table(&mut self, tok: Tok) -> Step<Did> {
        match tok {
            Tok::Chars(text) => {
                let outer = self.open.last().is_some_and(|(_, n)| {
                    matches!(
                        *n,
                        local_name!("table")
                            | local_name!("tbody")
                            | local_name!("tfoot")
                            | local_name!("thead")
                            | local_name!("tr")
                    )
                });
                if !outer {
                    // Foster parenting.
                    return Err(GiveUp);
                }
                self.table_orig = self.mode;
                Ok(Did::Reprocess(Mode::InTableText, Tok::Chars(text)))
            }
            Tok::Comment => self.comment_to(self.current()),
            Tok::Start(tag) => match tag.name {
                local_name!("caption") => {
                    self.pop_until_current(table_context);
                    self.formatting.push((MARKER, local_name!("")));
                    self.insert(tag.name, tag.attrs, true);
                    self.mode = Mode::InCaption;
                    DONE
                }
                local_name!("colgroup") => {
                    self.pop_until_current(table_context);
                    self.insert(tag.name, tag.attrs, true);
                    self.mode = Mode::InColumnGroup;
                    DONE
                }
                local_name!("col") => {
                    self.pop_until_current(table_context);
                    self.insert(local_name!("colgroup"), Vec::new(), true);
                    Ok(Did::Reprocess(Mode::InColumnGroup, Tok::Start(tag)))
                }
                local_name!("tbody") | local_name!("tfoot") | local_name!("thead") => {
                    self.pop_until_current(table_context);
                    self.insert(tag.name, tag.attrs, true);
                    self.mode = Mode::InTableBody;
                    DONE
                }
                local_name!("td") | local_name!("th") | local_name!("tr") => {
                    self.pop_until_current(table_context);
                    self.insert(local_name!("tbody"), Vec::new(), true);
                    Ok(Did::Reprocess(Mode::InTableBody, Tok::Start(tag)))
                }
                local_name!("style") | local_name!("script") => self.in_head(Tok::Start(tag)),
                local_name!("input")
                    if attr(&tag.attrs, local_name!("type"))
                        .is_some_and(|t| t.eq_ignore_ascii_case("hidden")) =>
                {
                    self.insert(tag.name, tag.attrs, false);
                    DONE
                }
                local_name!("form") => {
                    if self.form.is_none() {
                        self.form = Some(self.insert(tag.name, tag.attrs, false));
                    }
                    DONE
                }
                // A table in a table, templates, and foster parenting.
                _ => Err(GiveUp),
            },
            Tok::End(name) => match name {
                local_name!("table") => {
                    if self.in_scope(Scope::Table, &name) {
                        self.pop_until(&name);
                        self.mode = self.reset_mode()?;
                    }
                    DONE
                }
                local_name!("body")
                | local_name!("caption")
                | local_name!("col")
                | local_name!("colgroup")
                | local_name!("html")
                | local_name!("tbody")
                | local_name!("td")
                | local_name!("tfoot")
                | local_name!("th")
                | local_name!("thead")
                | local_name!("tr") => DONE,
                _ => Err(GiveUp),
            },
            Tok::Eof => self.in_body(Tok::Eof),
        }
    }

    pub(super) fn in_table_text(&mut self, tok: Tok) -> Step<Did> {
        if let Tok::Chars(text) = tok {
            self.table_text.push(text);
            return DONE;
        }
        let pending = std::mem::take(&mut self.table_text);
        if pending.iter().any(|t| t.bytes().any(|c| !is_ws(c))) {
            // Foster parenting.
            return Err(GiveUp);
        }
        for text in pending {
            self.append_text(text);
        }
        Ok(Did::Reprocess(self.table_orig, tok))
    }

    pub(super) fn in_caption(&mut self, tok: Tok) -> Step<Did> {
        let closes = match &tok {
            Tok::Start(tag) => table_part(&tag.name),
            Tok::End(name) => matches!(*name, local_name!("table") | local_name!("caption")),
            _ => false,
        };
        if closes {
            if !self.in_scope(Scope::Table, &local_name!("caption")) {
                return DONE;
            }
            self.implied_end_tags(None);
            self.pop_until(&local_name!("caption"));
            self.clear_formatting_to_marker();
            if let Tok::End(local_name!("caption")) = tok {
                self.mode = Mode::InTable;
                return DONE;
            }
            return Ok(Did::Reprocess(Mode::InTable, tok));
        }
        match tok {
            Tok::End(
                local_name!("body")
                | local_name!("col")
                | local_name!("colgroup")
                | local_name!("html")
                | local_name!("tbody")
                | local_name!("td")
                | local_name!("tfoot")
                | local_name!("th")
                | local_name!("thead")
                | local_name!("tr"),
            ) => DONE,
            tok => self.in_body(tok),
        }
    }

    pub(super) fn in_column_group(&mut self, tok: Tok) -> Step<Did> {
        match tok {
            Tok::Comment => self.comment_to(self.current()),
            Tok::Start(tag) if tag.name == local_name!("html") => self.in_body(Tok::Start(tag)),
            Tok::Start(tag) if tag.name == local_name!("col") => {
                self.insert(tag.name, tag.attrs, false);
                DONE
            }
            Tok::Start(tag) if tag.name == local_name!("template") => Err(GiveUp),
            Tok::End(local_name!("colgroup")) => {
                if self
                    .open
                    .last()
                    .is_some_and(|(_, n)| *n == local_name!("colgroup"))
                {
                    self.open.pop();
                    self.mode = Mode::InTable;
                }
                DONE
            }
            Tok::End(local_name!("col")) => DONE,
            Tok::End(local_name!("template")) => Err(GiveUp),
            Tok::Eof => self.in_body(Tok::Eof),
            tok => {
                if self
                    .open
                    .last()
                    .is_some_and(|(_, n)| *n == local_name!("colgroup"))
                {
                    self.open.pop();
                    return Ok(Did::Reprocess(Mode::InTable, tok));
                }
                DONE
            }
        }
    }

    pub(super) fn in_table_body(&mut self, tok: Tok) -> Step<Did> {
        match tok {
            Tok::Start(tag) if tag.name == local_name!("tr") => {
                self.pop_until_current(table_body_context);
                self.insert(tag.name, tag.attrs, true);
                self.mode = Mode::InRow;
                DONE
            }
            Tok::Start(tag) if matches!(tag.name, local_name!("th") | local_name!("td")) => {
                self.pop_until_current(table_body_context);
                self.insert(local_name!("tr"), Vec::new(), true);
                Ok(Did::Reprocess(Mode::InRow, Tok::Start(tag)))
            }
            Tok::End(name @ (local_name!("tbody") | local_name!("tfoot") | local_name!("thead"))) => {
                if self.in_scope(Scope::Table, &name) {
                    self.pop_until_current(table_body_context);
                    self.open.pop();
                    self.mode = Mode::InTable;
                }
                DONE
            }
            tok @ (Tok::Start(_) | Tok::End(local_name!("table"))) if table_section_ends(&tok) => {
                if self.scope_has(Scope::Table, |_, n| {
                    matches!(
                        *n,
                        local_name!("table") | local_name!("tbody") | local_name!("tfoot")
                    )
                }) {
                    self.pop_until_current(table_body_context);
                    self.open.pop();
                    return Ok(Did::Reprocess(Mode::InTable, tok));
                }
                DONE
            }
            Tok::End(
                local_name!("body")
                | local_name!("caption")
                | local_name!("col")
                | local_name!("colgroup")
                | local_name!("html")
                | local_name!("td")
                | local_name!("th")
                | local_name!("tr"),
            ) => DONE,
            tok => self.in_table(tok),
        }
    }

    pub(super) fn in_row(&mut self, tok: Tok) -> Step<Did> {
        match tok {
            Tok::Start(tag) if matches!(tag.name, local_name!("th") | local_name!("td")) => {
                self.pop_until_current(table_row_context);
                self.insert(tag.name, tag.attrs, true);
                self.mode = Mode::InCell;
                self.formatting.push((MARKER, local_name!("")));
                DONE
            }
            Tok::End(local_name!("tr")) => {
                if self.in_scope(Scope::Table, &local_name!("tr")) {
                    self.pop_until_current(table_row_context);
                    self.open.pop();
                    self.mode = Mode::InTableBody;
                }
                DONE
            }
            tok @ (Tok::Start(_) | Tok::End(local_name!("table")))
                if table_section_ends(&tok)
                    || matches!(&tok, Tok::Start(t) if t.name == local_name!("tr")) =>
            {
                if self.in_scope(Scope::Table, &local_name!("tr")) {
                    self.pop_until_current(table_row_context);
                    self.open.pop();
                    return Ok(Did::Reprocess(Mode::InTableBody, tok));
                }
                DONE
            }
            Tok::End(name @ (local_name!("tbody") | local_name!("tfoot") | local_name!("thead"))) => {
                if !self.in_scope(Scope::Table, &name) {
                    return DONE;
                }
                if self.in_scope(Scope::Table, &local_name!("tr")) {
                    self.pop_until_current(table_row_context);
                    self.open.pop();
                    return Ok(Did::Reprocess(Mode::InTableBody, Tok::End(name)));
                }
                DONE
            }
            Tok::End(
                local_name!("body")
                | local_name!("caption")
                | local_name!("col")
                | local_name!("colgroup")
                | local_name!("html")
                | local_name!("td")
                | local_name!("th"),
            ) => DONE,
            tok => self.in_table(tok),
        }
    }

    pub(super) fn in_cell(&mut self, tok: Tok) -> Step<Did> {
        match tok {
            Tok::End(name @ (local_name!("td") | local_name!("th"))) => {
                if self.in_scope(Scope::Table, &name) {
                    self.implied_end_tags(None);
                    self.pop_until(&name);
                    self.clear_formatting_to_marker();
                    self.mode = Mode::InRow;
                }
                DONE
            }
            Tok::Start(tag) if table_part(&tag.name) => {
                if self.scope_has(Scope::Table, |_, n| {
                    matches!(*n, local_name!("td") | local_name!("th"))
                }) {
                    self.close_cell();
                    return Ok(Did::Reprocess(Mode::InRow, Tok::Start(tag)));
                }
                DONE
            }
            Tok::End(
                local_name!("body")
                | local_name!("caption")
                | local_name!("col")
                | local_name!("colgroup")
                | local_name!("html"),
            ) => DONE,
            Tok::End(
                name @ (local_name!("table")
                | local_name!("tbody")
                | local_name!("tfoot")
                | local_name!("thead")
                | local_name!("tr")),
            ) => {
                if self.in_scope(Scope::Table, &name) {
                    self.close_cell();
                    return Ok(Did::Reprocess(Mode::InRow, Tok::End(name)));
                }
                DONE
            }
            tok => self.in_body(tok),
        }
    }

    pub(super) fn close_cell(&mut self) {
        self.implied_end_tags(None);
        self.pop_through(|n| matches!(*n, local_name!("td") | local_name!("th")));
        self.clear_formatting_to_marker();
    }
}
