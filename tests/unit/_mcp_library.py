"""A library's MCP server (the real `mcp` SDK's MCPServer, stdio): no shop in sight. find_book reads, renew_loan
writes. The red team's MCP attacks must be built from these tools, not from the kit's reference shop."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

BOOKS = {"B-12": {"book_id": "B-12", "title": "Dune", "due": "2026-12-20", "member": "ann@example.com"}}

library: MCPServer = MCPServer("library", version="1")


@library.tool(description="Find a book on loan by its id: its title and due date.")
def find_book(book_id: str) -> dict[str, Any]:
    book = BOOKS.get(book_id)
    if book is None:
        raise ToolError(f"no book {book_id}")
    return dict(book)


@library.tool(description="Renew a loan for some weeks.")
def renew_loan(book_id: str, weeks: int) -> dict[str, Any]:
    return {"book_id": book_id, "renewed_weeks": weeks}


if __name__ == "__main__":
    library.run()
