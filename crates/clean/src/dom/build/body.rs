//! The "in body" insertion mode: most of a page's tokens.

use html5ever::tokenizer::Tag;
use html5ever::tokenizer::states::RawKind;
use html5ever::{LocalName, local_name};

use super::sets::{
    closes_block, from_head, is_formatting, is_formatting_end, is_given_up_in_body, is_heading,
    is_ignored_in_body, is_special, is_void_in_body, opens_block,
};
use super::{DONE, Did, GiveUp, MARKER, Mode, NIL, Quirks, Scope, State, Step, Tok, adjust_svg_attributes};

impl State {
    pub(super) fn in_body(&mut self, tok: Tok) -> Step<Did> {
        match tok {
            Tok::Chars(text) => {
                self.reconstruct()?;
                self.append_text(text);
                DONE
            }
            Tok::Comment => self.comment_to(self.current()),
            Tok::Start(tag) => self.start_in_body(tag),
            Tok::End(name) => self.end_in_body(name),
            Tok::Eof => DONE,
        }
    }

    pub(super) fn start_in_body(&mut self, tag: Tag) -> Step<Did> {
        match tag.name {
            local_name!("html") => {
                let html = self.open.first().map_or(NIL, |&(id, _)| id);
                self.add_attrs_if_missing(html, tag.attrs);
                DONE
            }
            _ if from_head(&tag.name) => self.in_head(Tok::Start(tag)),
            local_name!("body") => {
                if self.open.len() != 1
                    && let Some(&(body, local_name!("body"))) = self.open.get(1)
                {
                    self.add_attrs_if_missing(body, tag.attrs);
                }
                DONE
            }
            _ if opens_block(&tag.name) => {
                self.close_p_in_button_scope();
                self.insert(tag.name, tag.attrs, true);
                DONE
            }
            _ if is_heading(&tag.name) => {
                self.close_p_in_button_scope();
                if self.current_is_heading() {
                    self.open.pop();
                }
                self.insert(tag.name, tag.attrs, true);
                DONE
            }
            local_name!("pre") | local_name!("listing") => {
                self.close_p_in_button_scope();
                self.insert(tag.name, tag.attrs, true);
                self.ignore_lf = true;
                DONE
            }
            local_name!("form") => {
                if self.form.is_none() {
                    self.close_p_in_button_scope();
                    self.form = Some(self.insert(tag.name, tag.attrs, true));
                }
                DONE
            }
            local_name!("li") | local_name!("dd") | local_name!("dt") => self.list_item(tag),
            local_name!("button") => {
                if self.in_scope(Scope::Default, &local_name!("button")) {
                    self.implied_end_tags(None);
                    self.pop_until(&local_name!("button"));
                }
                self.reconstruct()?;
                self.insert(tag.name, tag.attrs, true);
                DONE
            }
            local_name!("a") => {
                if self.since_marker().any(|(_, n)| *n == local_name!("a")) {
                    return Err(GiveUp);
                }
                self.reconstruct()?;
                self.formatting_element(tag)
            }
            _ if is_formatting(&tag.name) => {
                self.reconstruct()?;
                self.formatting_element(tag)
            }
            _ if is_void_in_body(&tag.name) => {
                self.reconstruct()?;
                self.insert(tag.name, tag.attrs, false);
                DONE
            }
            local_name!("image") => {
                self.reconstruct()?;
                self.insert(local_name!("img"), tag.attrs, false);
                DONE
            }
            local_name!("param") | local_name!("source") | local_name!("track") => {
                self.insert(tag.name, tag.attrs, false);
                DONE
            }
            local_name!("hr") => {
                self.close_p_in_button_scope();
                self.insert(tag.name, tag.attrs, false);
                DONE
            }
            local_name!("table") => self.table(tag),
            local_name!("textarea") => {
                self.ignore_lf = true;
                self.raw(tag, RawKind::Rcdata)
            }
            local_name!("xmp") => {
                self.close_p_in_button_scope();
                self.reconstruct()?;
                self.raw(tag, RawKind::Rawtext)
            }
            local_name!("iframe") | local_name!("noembed") | local_name!("noscript") => {
                self.raw(tag, RawKind::Rawtext)
            }
            _ if is_ignored_in_body(&tag.name) => DONE,
            _ if is_given_up_in_body(&tag.name) => Err(GiveUp),
            local_name!("svg") => {
                self.reconstruct()?;
                let mut tag = tag;
                adjust_svg_attributes(&mut tag.attrs);
                self.insert_svg(tag)
            }
            _ => {
                self.reconstruct()?;
                self.insert(tag.name, tag.attrs, true);
                DONE
            }
        }
    }

    /// A `<li>`, `<dd>` or `<dt>` start tag: the open item of its kind is
    /// closed first, unless a special element other than `<address>`,
    /// `<div>` and `<p>` is nearer.
    fn list_item(&mut self, tag: Tag) -> Step<Did> {
        let list = tag.name == local_name!("li");
        let mut to_close = None;
        for (_, name) in self.open.iter().rev() {
            let closes = if list {
                *name == local_name!("li")
            } else {
                matches!(*name, local_name!("dd") | local_name!("dt"))
            };
            if closes {
                to_close = Some(name.clone());
                break;
            }
            if is_special(name)
                && !matches!(
                    *name,
                    local_name!("address") | local_name!("div") | local_name!("p")
                )
            {
                break;
            }
        }
        if let Some(name) = to_close {
            self.implied_end_tags(Some(&name));
            self.pop_until(&name);
        }
        self.close_p_in_button_scope();
        self.insert(tag.name, tag.attrs, true);
        DONE
    }

    /// A `<table>` start tag "in body": an open `<p>` is closed first unless
    /// the document is in quirks mode (an unread DOCTYPE is given up on).
    fn table(&mut self, tag: Tag) -> Step<Did> {
        if self.in_scope(Scope::Button, &local_name!("p")) {
            match self.quirks {
                Quirks::No => self.close_p(),
                Quirks::Yes => {}
                Quirks::Unknown => return Err(GiveUp),
            }
        }
        self.insert(tag.name, tag.attrs, true);
        self.mode = Mode::InTable;
        DONE
    }

    pub(super) fn end_in_body(&mut self, name: LocalName) -> Step<Did> {
        match name {
            local_name!("template") => DONE,
            local_name!("body") => {
                if self.in_scope(Scope::Default, &local_name!("body")) {
                    self.mode = Mode::AfterBody;
                }
                DONE
            }
            local_name!("html") => {
                if self.in_scope(Scope::Default, &local_name!("body")) {
                    return Ok(Did::Reprocess(Mode::AfterBody, Tok::End(name)));
                }
                DONE
            }
            _ if closes_block(&name) => {
                if self.in_scope(Scope::Default, &name) {
                    self.implied_end_tags(None);
                    self.pop_until(&name);
                }
                DONE
            }
            local_name!("form") => {
                let Some(form) = self.form.take() else {
                    return DONE;
                };
                if !self.node_in_scope(form) {
                    return DONE;
                }
                self.implied_end_tags(None);
                if let Some(at) = self.open.iter().rposition(|&(id, _)| id == form) {
                    self.open.remove(at);
                }
                DONE
            }
            local_name!("p") => {
                if !self.in_scope(Scope::Button, &local_name!("p")) {
                    self.insert(local_name!("p"), Vec::new(), true);
                }
                self.close_p();
                DONE
            }
            local_name!("li") | local_name!("dd") | local_name!("dt") => {
                let scope = if name == local_name!("li") {
                    Scope::ListItem
                } else {
                    Scope::Default
                };
                if self.in_scope(scope, &name) {
                    self.implied_end_tags(Some(&name));
                    self.pop_until(&name);
                }
                DONE
            }
            _ if is_heading(&name) => {
                if self.scope_has(Scope::Default, |_, n| is_heading(n)) {
                    self.implied_end_tags(None);
                    self.pop_through(is_heading);
                }
                DONE
            }
            _ if is_formatting_end(&name) => {
                self.adoption_agency(name)?;
                DONE
            }
            local_name!("applet") | local_name!("marquee") | local_name!("object") => {
                if self.in_scope(Scope::Default, &name) {
                    return Err(GiveUp);
                }
                DONE
            }
            local_name!("br") | local_name!("option") => Err(GiveUp),
            _ => {
                self.any_other_end_tag(&name);
                DONE
            }
        }
    }

    /// html5ever's `process_end_tag_in_body`.
    pub(super) fn any_other_end_tag(&mut self, name: &LocalName) {
        let mut matched = None;
        for (i, (_, n)) in self.open.iter().enumerate().rev() {
            if n == name {
                matched = Some(i);
                break;
            }
            if is_special(n) {
                return;
            }
        }
        let Some(at) = matched else { return };
        self.implied_end_tags(Some(name));
        self.open.truncate(at);
    }

    /// The adoption agency algorithm where no furthest block is found (a
    /// formatting element closed with only phrasing elements above it); a
    /// furthest block is given up on.
    pub(super) fn adoption_agency(&mut self, subject: LocalName) -> Step<()> {
        if let Some(&(current, ref name)) = self.open.last()
            && *name == subject
            && !self.formatting.iter().any(|&(id, _)| id == current)
        {
            self.open.pop();
            return Ok(());
        }
        let marker = self
            .formatting
            .iter()
            .rposition(|&(id, _)| id == MARKER)
            .map_or(0, |m| m + 1);
        let found = self.formatting[marker..].iter().rposition(|(_, n)| *n == subject);
        let Some(entry) = found.map(|i| marker + i) else {
            self.any_other_end_tag(&subject);
            return Ok(());
        };
        let element = self.formatting[entry].0;
        let Some(at) = self.open.iter().rposition(|&(id, _)| id == element) else {
            self.formatting.remove(entry);
            return Ok(());
        };
        if !self.node_in_scope(element) {
            return Ok(());
        }
        if self.open[at..].iter().any(|(_, n)| is_special(n)) {
            return Err(GiveUp);
        }
        self.open.truncate(at);
        self.formatting.remove(entry);
        Ok(())
    }

    /// A formatting element inserted and added to the list. Noah's Ark
    /// (at most three equal entries) is given up on.
    pub(super) fn formatting_element(&mut self, tag: Tag) -> Step<Did> {
        if self.since_marker().filter(|(_, n)| *n == tag.name).count() >= 3 {
            return Err(GiveUp);
        }
        let id = self.insert(tag.name.clone(), tag.attrs, true);
        self.formatting.push((id, tag.name));
        DONE
    }
}
