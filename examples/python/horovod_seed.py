#!/usr/bin/env python3
# The users' "PyTorch + Horovod" training script (docs: ../shared seed), run on gj.torch.
# Differences from the original, line by line:
#   - `import horovod.torch as hvd` -> `import gj.torch as hvd` (the migration);
#   - on a machine without a GPU: `torch.cuda.set_device(...)` and the `.cuda()` calls run only
#     when CUDA is available (the original requires a GPU);
#   - the dataset size, the epoch count and the output directory may be shrunk/moved with
#     GJ_SEED_SAMPLES (10000), GJ_SEED_EPOCHS (10) and GJ_SEED_OUTPUT (/output), so a test
#     trains it in seconds; the defaults are the original's.
#     gj-mpirun /usr/share/gj/examples/python/horovod_seed.py
import torch
import torch.nn as nn
import torch.optim as optim
import gj.torch as hvd
import os

hvd.init()

if torch.cuda.is_available():
    torch.cuda.set_device(hvd.local_rank())


def on_device(t):
    return t.cuda() if torch.cuda.is_available() else t


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = torch.relu(self.conv1(x))
        x = torch.relu(self.conv2(x))
        x = torch.max_pool2d(x, 2)
        x = torch.flatten(x, 1)
        x = torch.relu(self.fc1(x))
        return self.fc2(x)


model = on_device(Net())
optimizer = optim.SGD(model.parameters(), lr=0.01 * hvd.size())

optimizer = hvd.DistributedOptimizer(
    optimizer,
    named_parameters=model.named_parameters()
)

hvd.broadcast_parameters(model.state_dict(), root_rank=0)
hvd.broadcast_optimizer_state(optimizer, root_rank=0)

samples = int(os.environ.get("GJ_SEED_SAMPLES", "10000"))
train_dataset = torch.utils.data.TensorDataset(
    torch.randn(samples, 1, 28, 28),
    torch.randint(0, 10, (samples,))
)

train_sampler = torch.utils.data.distributed.DistributedSampler(
    train_dataset, num_replicas=hvd.size(), rank=hvd.rank()
)

train_loader = torch.utils.data.DataLoader(
    train_dataset, batch_size=64, sampler=train_sampler
)

criterion = nn.CrossEntropyLoss()

for epoch in range(int(os.environ.get("GJ_SEED_EPOCHS", "10"))):
    train_sampler.set_epoch(epoch)
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = on_device(data), on_device(target)
        optimizer.zero_grad()
        output = model(data)
        loss = criterion(output, target)
        loss.backward()
        optimizer.step()

        if batch_idx % 100 == 0 and hvd.rank() == 0:
            print(f'Epoch {epoch}, Batch {batch_idx}, Loss: {loss.item():.4f}')

if hvd.rank() == 0:
    torch.save(model.state_dict(), os.path.join(os.environ.get("GJ_SEED_OUTPUT", "/output"), 'model.pth'))
