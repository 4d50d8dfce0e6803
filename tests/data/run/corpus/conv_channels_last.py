# expect: run.exception conv-channels confirmed
# Atari frames in (N, H, W, C) order given to a convolution built for (N, C, H, W).
import torch
encoder = torch.nn.Conv2d(3, 16, kernel_size=8, stride=4)
frames = torch.zeros(1, 84, 84, 3)
print(encoder(frames).shape)
