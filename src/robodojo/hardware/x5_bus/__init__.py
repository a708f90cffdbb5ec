"""Run the unmodified ARX X5 SDK without CAN hardware: a SocketCAN shim and an emulator of the arm's motor bus."""
