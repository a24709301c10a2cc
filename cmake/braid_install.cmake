# Installation: filled in by the packaging work (headers, libraries, tools, braidConfig.cmake).
