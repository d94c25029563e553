"""Inline keyboards: a card's buttons as Telegram markup."""

from __future__ import annotations

from telegram import InlineKeyboardButton, InlineKeyboardMarkup

from palui.domain import Card


def keyboard(card: Card) -> InlineKeyboardMarkup | None:
    if not card.keyboard:
        return None  # an edit without a keyboard removes the buttons
    return InlineKeyboardMarkup(
        [
            [
                InlineKeyboardButton(b.label, url=b.url)
                if b.url
                else InlineKeyboardButton(b.label, callback_data=b.data)
                for b in row
            ]
            for row in card.keyboard
        ]
    )
